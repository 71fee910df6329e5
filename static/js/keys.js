// The key queue of the keyboard-first screens (labelling.js, adjudicating.js): no key is lost, none acts twice.
//
// A screen's script loads in <head> without defer, with this file before it, so it listens before anything is on
// the screen. Keys that arrive before the screen is wired, or while it is busy (a save, a swap, a submit on its
// way), wait and are played, in order, on the screen they were typed for. A screen that moves to another page
// carries its waiting keys there in sessionStorage: to the address it goes to (`leave`), or, after a form's submit
// (`submitted`), to the page the submit lands on. They are played only on a page reached from the one they were
// typed on; a submit that comes back to the page it left (it was refused) drops them and the screen says so.
(function () {
  "use strict";

  function isText(element, fields) { return !!element && !!element.matches && element.matches(fields); }

  // A key typed into a text field after a waiting note key, played as typing
  function typeInto(field, key) {
    if (key === "Escape") { field.blur(); }
    else if (key === "Backspace") { field.value = field.value.slice(0, -1); }
    else if (key === "Enter") { field.value += "\n"; }
    else { field.value += key; }
  }

  function pathOf(url) {
    try { return new URL(url, window.location.href).pathname; } catch (e) { return ""; }
  }

  // options: carry (sessionStorage name), root (id of the screen's element; none: the page is the screen),
  // shortcuts (a RegExp of the keys worth keeping), note (the key that focuses a text field, after which typed
  // characters are kept too), fields (the selector of text fields, whose keys are theirs), start(root) (wire the
  // screen), act(key) (act on one key on the wired screen; true when it meant something), dropped(n) (say that n
  // carried keys were not applied: the submit came back to this page).
  window.portalKeys = function (options) {
    var fields = options.fields || "textarea, input[type=text]";
    var ready = false;   // the screen is wired
    var absent = false;  // this page has no such screen
    var busy = false;    // a save, a swap or a submit is on its way
    var leaving = null;  // the page is navigating: {to: a path, or "" for wherever a submit lands}
    var pending = [];

    function play() {
      while (ready && !busy && pending.length) {
        var key = pending.shift();
        if (isText(document.activeElement, fields)) { typeInto(document.activeElement, key); } else { options.act(key); }
      }
    }

    function keeps(key) {
      return options.shortcuts.test(key) ||
        (!!options.note && pending.indexOf(options.note) !== -1 && (key.length === 1 || key === "Backspace" || key === "Escape"));
    }

    document.addEventListener("keydown", function (event) {
      if (absent || event.ctrlKey || event.metaKey || event.altKey) { return; }
      if (isText(event.target, fields)) {
        if (event.key === "Escape") { event.target.blur(); }
        return;
      }
      if (!ready || busy) {
        if (keeps(event.key)) { pending.push(event.key); event.preventDefault(); }
        return;
      }
      if (options.act(event.key)) { event.preventDefault(); }
    });

    window.addEventListener("pagehide", function () {
      if (leaving && pending.length) {
        window.sessionStorage.setItem(options.carry, JSON.stringify(
          { from: window.location.pathname, to: leaving.to, keys: pending }));
      }
    });

    // Keys carried from the page that sent the browser here: played if they were meant for this page
    function carried() {
      var stored = window.sessionStorage.getItem(options.carry);
      if (!stored) { return []; }
      window.sessionStorage.removeItem(options.carry);
      var data = JSON.parse(stored);
      var here = window.location.pathname;
      if (!document.referrer || pathOf(document.referrer) !== data.from) { return []; }  // not reached from there
      if (data.to) { return here === data.to ? data.keys : []; }
      if (here !== data.from) { return data.keys; }
      if (options.dropped) { options.dropped(data.keys.length); }  // the submit came back: they were for another page
      return [];
    }

    document.addEventListener("DOMContentLoaded", function () {
      var root = options.root ? document.getElementById(options.root) : document.body;
      if (!root) { absent = true; pending = []; return; }
      options.start(root);
      pending = carried().concat(pending);
      ready = true;
      play();
    });

    return {
      busy: function () { return busy; },
      // a save or a swap is on its way: keys wait for `release`
      hold: function () { busy = true; },
      release: function () { busy = false; play(); },
      // the screen stays as it was and the waiting keys, meant for what was on its way, are dropped: how many
      drop: function () { var n = pending.length; pending = []; busy = false; return n; },
      // go to `url`, the waiting keys with it
      leave: function (url) { leaving = { to: pathOf(url) }; busy = true; window.location.assign(url); },
      // a form was submitted: keys wait, and go to the page the submit lands on
      submitted: function () { leaving = { to: "" }; busy = true; }
    };
  };
})();

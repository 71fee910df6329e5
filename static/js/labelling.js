// Keyboard-first labelling: number keys answer the highlighted question, arrows move between
// questions, Enter saves and takes the next unit, s skips (the unit goes back), c corrects the
// last label. Units are reserved by POST only, one at a time: after a save the next unit is
// reserved and swapped in. A save that fails keeps the form as it is.
//
// No key is lost: the script is loaded in <head> without defer, so it listens before any unit is
// on the screen; keys that arrive before the screen is wired, or while a save or the next unit is
// on its way, wait in `pending` and are played, in order, on the unit they were typed for. When the
// page itself moves on (a correction saved, a failed swap), they travel to the next labelling page
// in sessionStorage.
(function () {
  "use strict";
  var CARRIED = "labelling-pending-keys";
  var root = null;
  var status = null;
  var nextUrl = "";
  var correcting = false;
  var ready = false;   // the screen is wired
  var absent = false;  // this page has no labelling screen
  var busy = false;    // a save or a swap is in flight
  var leavingTo = "";  // this page is navigating there (keys typed meanwhile are carried over)
  var pending = [];

  function criteria() { return Array.prototype.slice.call(root.querySelectorAll("fieldset.criterion")); }
  function active() { return root.querySelector("fieldset.criterion.is-active"); }
  function say(text, kind) { status.textContent = text; status.className = "save-status" + (kind ? " is-" + kind : ""); }
  function token() {
    var input = root.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }
  function isText(element) { return !!element && element.matches && element.matches("textarea, input[type=text]"); }

  function leave(url) { leavingTo = url; busy = true; window.location.assign(url); }

  function activate(fieldset) {
    criteria().forEach(function (f) { f.classList.toggle("is-active", f === fieldset); });
    if (fieldset) { fieldset.scrollIntoView({ block: "nearest" }); }
  }

  function move(step) {
    var all = criteria();
    var i = all.indexOf(active());
    activate(all[Math.min(all.length - 1, Math.max(0, i + step))]);
  }

  // POST `url` (reserving a unit) and swap the unit it answers with in place of the current one
  function swapFrom(url) {
    var body = new FormData();
    body.append("fragment", "1");
    body.append("csrfmiddlewaretoken", token());
    busy = true;
    return fetch(url, { method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRFToken": token() } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) { root.innerHTML = html; wire(); busy = false; play(); })
      .catch(function () { leave(nextUrl); });
  }

  function save(form) {
    var missing = criteria().filter(function (f) { return !f.querySelector("input:checked"); });
    if (missing.length) { activate(missing[0]); say("Answer every question before saving.", "error"); return; }
    busy = true;
    say("Saving…");
    fetch(form.action, {
      method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: { "Accept": "application/json" }
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; });
    }).then(function (res) {
      if (!(res.ok && res.body.saved)) { failed(res.body.error || "Not saved."); return; }
      if (correcting) { leave(nextUrl); return; }
      say("Saved.", "ok");
      swapFrom(nextUrl);
    }).catch(function () {
      failed("Not saved: the server did not answer. Your answers are still here; press Enter to try again.");
    });
  }

  // The unit stays as it was: keys typed after Enter were meant for the next unit, so they are not played on this one.
  function failed(text) {
    var dropped = pending.length;
    pending = [];
    busy = false;
    say(text + (dropped ? " The " + dropped + " key" + (dropped === 1 ? "" : "s") + " typed while saving were not applied." : ""),
        "error");
  }

  function skip() {
    var unit = root.querySelector("article.unit");
    if (!unit || !unit.dataset.skipUrl) { return false; }
    say("Skipped: the unit went back.", "ok");
    swapFrom(unit.dataset.skipUrl);
    return true;
  }

  function wire() {
    var form = root.querySelector("form.rubric");
    var take = root.querySelector("form.take-next");
    if (take) {
      take.addEventListener("submit", function (event) { event.preventDefault(); if (!busy) { swapFrom(take.action); } });
      take.querySelector("button").focus();
    }
    var skipForm = document.getElementById("skip-form");
    var skipButton = root.querySelector("button[form=skip-form]");
    if (skipForm && skipButton) {
      skipButton.addEventListener("click", function (event) { event.preventDefault(); if (!busy) { skip(); } });
    }
    if (!form) { return; }
    form.addEventListener("submit", function (event) { event.preventDefault(); if (!busy) { save(form); } });
    criteria().forEach(function (f) {
      f.addEventListener("click", function () { activate(f); });
    });
    activate(criteria()[0]);
  }

  // Act on one key on the wired screen; true when the key meant something here.
  function act(key) {
    var form = root.querySelector("form.rubric");
    var take = root.querySelector("form.take-next");
    var correct = document.getElementById("correct-last");
    if (key === "c" && correct) { leave(correct.href); return true; }
    if (!form) {
      if (take && key === "Enter") { swapFrom(take.action); return true; }
      return false;
    }
    if (/^[1-9]$/.test(key)) {
      var fieldset = active();
      var radios = fieldset ? fieldset.querySelectorAll("input[type=radio]") : [];
      var radio = radios[Number(key) - 1];
      if (!radio) { return false; }
      radio.checked = true;
      move(1);
    } else if (key === "ArrowDown") { move(1); }
    else if (key === "ArrowUp") { move(-1); }
    else if (key === "Enter") { save(form); }
    else if (key === "s") { return skip(); }
    else if (key === "n") {
      var note = form.querySelector("textarea");
      if (!note) { return false; }
      note.focus();
    } else { return false; }
    return true;
  }

  // A key typed into the note after a waiting "n", played as typing
  function typeInto(field, key) {
    if (key === "Escape") { field.blur(); }
    else if (key === "Backspace") { field.value = field.value.slice(0, -1); }
    else if (key === "Enter") { field.value += "\n"; }
    else { field.value += key; }
  }

  // Play the waiting keys in order until one starts a save or a swap (the rest wait for it to finish)
  function play() {
    while (ready && !busy && pending.length) {
      var key = pending.shift();
      if (isText(document.activeElement)) { typeInto(document.activeElement, key); } else { act(key); }
    }
  }

  // Keys worth keeping while the screen cannot take them: the shortcuts, and, after a waiting "n", what is typed into the note
  function keeps(key) {
    return /^([1-9]|Enter|ArrowUp|ArrowDown|s|n|c)$/.test(key) ||
      (pending.indexOf("n") !== -1 && (key.length === 1 || key === "Backspace" || key === "Escape"));
  }

  document.addEventListener("keydown", function (event) {
    if (absent || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (isText(event.target)) {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    if (!ready || busy) {
      if (keeps(event.key)) { pending.push(event.key); event.preventDefault(); }
      return;
    }
    if (act(event.key)) { event.preventDefault(); }
  });

  window.addEventListener("pagehide", function () {
    if (leavingTo && pending.length) {
      window.sessionStorage.setItem(CARRIED, JSON.stringify({ url: leavingTo, keys: pending }));
    }
  });

  // Keys carried from the labelling page that sent the browser here come first
  function carried() {
    var stored = window.sessionStorage.getItem(CARRIED);
    if (!stored) { return []; }
    window.sessionStorage.removeItem(CARRIED);
    var data = JSON.parse(stored);
    return new URL(data.url, window.location.href).pathname === window.location.pathname ? data.keys : [];
  }

  document.addEventListener("DOMContentLoaded", function () {
    root = document.getElementById("labelling");
    if (!root) { absent = true; pending = []; return; }
    status = document.getElementById("save-status");
    nextUrl = root.dataset.nextUrl;
    correcting = root.dataset.mode === "correct";
    pending = carried().concat(pending);
    wire();
    ready = true;
    play();
  });
})();

// Keyboard adjudication: v / i / u choose the final status, 1-9 the annotator the decision agrees
// with (0 neither), n jumps to the note, Enter records, j opens the next disputed unit undecided.
//
// No key is lost and no decision is posted twice: the script is loaded in <head> without defer (after
// keys.js, the key queue it shares with the labelling page), so it listens before the unit shows; keys
// typed before the page is wired wait and are played on it, and keys typed once a decision is on its
// way (Enter again included) wait and are played on the unit the decision opens next. If the decision
// comes back refused, they are dropped and the page says so.
(function () {
  "use strict";
  var statuses = { v: "valid", i: "invalid", u: "unresolved" };
  var form = null;
  var next = null;
  var status = null;
  var keys = window.portalKeys({
    carry: "adjudicating-pending-keys", shortcuts: /^([0-9]|v|i|u|n|j|Enter)$/, note: "n",
    fields: "textarea, input[type=text], select", start: start, act: act, dropped: dropped
  });

  function say(text, kind) {
    if (status) { status.textContent = text; status.className = "save-status" + (kind ? " is-" + kind : ""); }
  }

  function start() {
    form = document.getElementById("adjudication-form");
    next = document.getElementById("next-disputed");
    status = document.getElementById("record-status");
    if (!form) { return; }
    form.addEventListener("submit", function (event) {
      if (keys.busy()) { event.preventDefault(); return; }  // a decision is on its way: a second would post twice
      keys.submitted();
      say("Recording…");
    });
  }

  function dropped(n) {
    say("The " + n + " key" + (n === 1 ? "" : "s") + " typed while recording were not applied: the decision was not recorded.",
        "error");
  }

  // Act on one key on the wired page; true when the key meant something here.
  function act(key) {
    if (key === "j" && next) { keys.leave(next.href); return true; }
    if (!form) { return false; }
    var chosen = statuses[key];
    if (chosen) {
      var radio = form.querySelector("input[name=final_status][value=" + chosen + "]");
      if (!radio) { return false; }
      radio.checked = true;
      radio.focus();
    } else if (/^[0-9]$/.test(key)) {
      var upheld = form.querySelector("select[name=upheld]");
      var value = key === "0" ? "" : key;
      if (!upheld || !Array.prototype.some.call(upheld.options, function (o) { return o.value === value; })) { return false; }
      upheld.value = value;
    } else if (key === "n") {
      var note = form.querySelector("textarea");
      if (!note) { return false; }
      note.focus();
    } else if (key === "Enter") {
      if (form.requestSubmit) { form.requestSubmit(); } else if (!keys.busy()) { keys.submitted(); form.submit(); }
    } else { return false; }
    return true;
  }
})();

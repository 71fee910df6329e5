// Keyboard-first labelling: number keys answer the highlighted question, arrows move between
// questions, Enter saves and takes the next unit, s skips (the unit goes back), c corrects the
// last label. Units are reserved by POST only, one at a time: after a save the next unit is
// reserved and swapped in. A save that fails keeps the form as it is.
//
// No key is lost: the script is loaded in <head> without defer (after keys.js, the key queue it
// shares with the adjudication page), so it listens before any unit is on the screen; keys that
// arrive before the screen is wired, or while a save or the next unit is on its way, wait and are
// played, in order, on the unit they were typed for. When the page itself moves on (a correction
// saved, a failed swap), they travel to the next labelling page.
(function () {
  "use strict";
  var root = null;
  var status = null;
  var nextUrl = "";
  var correcting = false;
  var keys = window.portalKeys({
    carry: "labelling-pending-keys", root: "labelling", shortcuts: /^([1-9]|Enter|ArrowUp|ArrowDown|s|n|c)$/, note: "n",
    start: start, act: act
  });

  function criteria() { return Array.prototype.slice.call(root.querySelectorAll("fieldset.criterion")); }
  function active() { return root.querySelector("fieldset.criterion.is-active"); }
  function say(text, kind) { status.textContent = text; status.className = "save-status" + (kind ? " is-" + kind : ""); }
  function token() {
    var input = root.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

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
    keys.hold();
    return fetch(url, { method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRFToken": token() } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) { root.innerHTML = html; wire(); keys.release(); })
      .catch(function () { keys.leave(nextUrl); });
  }

  function save(form) {
    var missing = criteria().filter(function (f) { return !f.querySelector("input:checked"); });
    if (missing.length) { activate(missing[0]); say("Answer every question before saving.", "error"); return; }
    keys.hold();
    say("Saving…");
    fetch(form.action, {
      method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: { "Accept": "application/json" }
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; });
    }).then(function (res) {
      if (!(res.ok && res.body.saved)) { failed(res.body.error || "Not saved."); return; }
      if (correcting) { keys.leave(nextUrl); return; }
      say("Saved.", "ok");
      swapFrom(nextUrl);
    }).catch(function () {
      failed("Not saved: the server did not answer. Your answers are still here; press Enter to try again.");
    });
  }

  // The unit stays as it was: keys typed after Enter were meant for the next unit, so they are not played on this one.
  function failed(text) {
    var dropped = keys.drop();
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
      take.addEventListener("submit", function (event) { event.preventDefault(); if (!keys.busy()) { swapFrom(take.action); } });
      take.querySelector("button").focus();
    }
    var skipForm = document.getElementById("skip-form");
    var skipButton = root.querySelector("button[form=skip-form]");
    if (skipForm && skipButton) {
      skipButton.addEventListener("click", function (event) { event.preventDefault(); if (!keys.busy()) { skip(); } });
    }
    if (!form) { return; }
    form.addEventListener("submit", function (event) { event.preventDefault(); if (!keys.busy()) { save(form); } });
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
    if (key === "c" && correct) { keys.leave(correct.href); return true; }
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

  function start(screen) {
    root = screen;
    status = document.getElementById("save-status");
    nextUrl = root.dataset.nextUrl;
    correcting = root.dataset.mode === "correct";
    wire();
  }
})();

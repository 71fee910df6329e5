// Keyboard-first labelling: number keys answer the highlighted question, arrows move between
// questions, Enter saves and takes the next unit, s skips (the unit goes back), c corrects the
// last label. Units are reserved by POST only, one at a time: after a save the next unit is
// reserved and swapped in. A save that fails keeps the form as it is.
(function () {
  "use strict";
  var root = document.getElementById("labelling");
  if (!root) { return; }
  var status = document.getElementById("save-status");
  var nextUrl = root.dataset.nextUrl;
  var correcting = root.dataset.mode === "correct";
  var busy = false;

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
    busy = true;
    return fetch(url, { method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRFToken": token() } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) { busy = false; root.innerHTML = html; wire(); })
      .catch(function () { busy = false; window.location.assign(nextUrl); });
  }

  function save(form) {
    if (busy) { return; }
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
      busy = false;
      if (!(res.ok && res.body.saved)) { say(res.body.error || "Not saved.", "error"); return; }
      if (correcting) { window.location.assign(nextUrl); return; }
      say("Saved.", "ok");
      swapFrom(nextUrl);
    }).catch(function () {
      busy = false;
      say("Not saved: the server did not answer. Your answers are still here; press Enter to try again.", "error");
    });
  }

  function skip() {
    var unit = root.querySelector("article.unit");
    if (busy || !unit || !unit.dataset.skipUrl) { return; }
    say("Skipped: the unit went back.", "ok");
    swapFrom(unit.dataset.skipUrl);
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
      skipButton.addEventListener("click", function (event) { event.preventDefault(); skip(); });
    }
    if (!form) { return; }
    form.addEventListener("submit", function (event) { event.preventDefault(); save(form); });
    criteria().forEach(function (f) {
      f.addEventListener("click", function () { activate(f); });
    });
    activate(criteria()[0]);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.target.matches("textarea, input[type=text]")) {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    var form = root.querySelector("form.rubric");
    var take = root.querySelector("form.take-next");
    var correct = document.getElementById("correct-last");
    if (event.key === "c" && correct) { event.preventDefault(); window.location.assign(correct.href); return; }
    if (!form) {
      if (take && event.key === "Enter" && !busy) { event.preventDefault(); swapFrom(take.action); }
      return;
    }
    if (/^[1-9]$/.test(event.key)) {
      var fieldset = active();
      var radios = fieldset ? fieldset.querySelectorAll("input[type=radio]") : [];
      var radio = radios[Number(event.key) - 1];
      if (radio) { radio.checked = true; move(1); event.preventDefault(); }
    } else if (event.key === "ArrowDown") { move(1); event.preventDefault(); }
    else if (event.key === "ArrowUp") { move(-1); event.preventDefault(); }
    else if (event.key === "Enter") { event.preventDefault(); save(form); }
    else if (event.key === "s") { event.preventDefault(); skip(); }
    else if (event.key === "n") {
      var note = form.querySelector("textarea");
      if (note) { note.focus(); event.preventDefault(); }
    }
  });

  wire();
})();

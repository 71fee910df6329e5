// Keyboard adjudication: v / i / u choose the final status, 1-9 the annotator the decision agrees
// with (0 neither), n jumps to the note, Enter records, j opens the next disputed unit undecided.
(function () {
  "use strict";
  var form = document.getElementById("adjudication-form");
  var next = document.getElementById("next-disputed");
  var statuses = { v: "valid", i: "invalid", u: "unresolved" };

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.target.matches("textarea, input[type=text], select")) {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    if (event.key === "j" && next) { event.preventDefault(); window.location.assign(next.href); return; }
    if (!form) { return; }
    var status = statuses[event.key];
    if (status) {
      var radio = form.querySelector("input[name=final_status][value=" + status + "]");
      if (radio) { radio.checked = true; radio.focus(); event.preventDefault(); }
    } else if (/^[0-9]$/.test(event.key)) {
      var upheld = form.querySelector("select[name=upheld]");
      var value = event.key === "0" ? "" : event.key;
      if (upheld && Array.prototype.some.call(upheld.options, function (o) { return o.value === value; })) {
        upheld.value = value;
        event.preventDefault();
      }
    } else if (event.key === "n") {
      var note = form.querySelector("textarea");
      if (note) { note.focus(); event.preventDefault(); }
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
    }
  });
})();

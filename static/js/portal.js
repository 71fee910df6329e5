// Every page: a table wider than its card scrolls sideways inside it, and says so. Without the note the
// columns past the card's edge were cut off unseen at 1366 px (the dialogue metrics' last column, the
// conflict page's later scenarios): the box gets the class is-wider, and portal.css writes the note.
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll(".table-scroll, .wrap-x").forEach(function (box) {
      box.classList.toggle("is-wider", box.scrollWidth > box.clientWidth + 1);
    });
  }
  document.addEventListener("DOMContentLoaded", mark);
  window.addEventListener("resize", mark);
  document.addEventListener("htmx:afterSettle", mark);  // a fragment swapped in (filters, sorting)
})();

// A submit button that says what it does while the server works (data-busy="Creating draft…") is disabled and
// says it from the click until the next page arrives: a slow answer shows progress, and a second click sends
// nothing twice. A page shown again from the back/forward cache gets its buttons back.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    if (event.defaultPrevented || !button || !button.dataset.busy) { return; }
    button.dataset.idle = button.textContent;
    button.textContent = button.dataset.busy;
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
  });
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) { return; }
    document.querySelectorAll("button[aria-busy=true][data-idle]").forEach(function (button) {
      button.textContent = button.dataset.idle;
      button.disabled = false;
      button.removeAttribute("aria-busy");
    });
  });
})();

// A dropdown of checkboxes (runs.widgets.CheckboxDropdown) keeps its summary true while boxes are ticked: the
// filter form itself is not swapped, only the results, so the summary is rewritten here by the rule
// CheckboxDropdown.summary writes it on the server ("all 19 runs", "2 of 19: a, b", "3 of 19: a, b and 1 more").
(function () {
  "use strict";
  var NAMED = 2;
  document.addEventListener("change", function (event) {
    var box = event.target.closest && event.target.closest("details.multi");
    if (!box) { return; }
    var all = box.querySelectorAll("input[type=checkbox]");
    var chosen = Array.prototype.filter.call(all, function (input) { return input.checked; }).map(function (input) {
      return input.parentNode.querySelector("span").textContent;
    });
    var text;
    if (!chosen.length) {
      if (box.dataset.none) { text = box.dataset.none; }
      else if (all.length === 0) { text = "no " + box.dataset.noun; }
      else if (all.length === 1) { text = all[0].parentNode.querySelector("span").textContent + " (the only one)"; }
      else { text = "all " + all.length + " " + box.dataset.noun; }
    } else {
      text = chosen.length + " of " + all.length + ": " + chosen.slice(0, NAMED).join(", ") +
        (chosen.length > NAMED ? " and " + (chosen.length - NAMED) + " more" : "");
    }
    box.querySelector("summary").textContent = text;
  });
  // a click outside an open dropdown closes it, as a select's list closes
  document.addEventListener("click", function (event) {
    document.querySelectorAll("details.multi[open]").forEach(function (box) {
      if (!box.contains(event.target)) { box.open = false; }
    });
  });
})();

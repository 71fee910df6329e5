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

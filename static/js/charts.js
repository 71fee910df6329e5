/* Renders every element with data-figure="<Plotly figure JSON>" using Plotly; re-runs on content htmx swaps in.
   (The figure rides in an attribute: htmx, with allowScriptTags false, drops script elements from swapped content.) */
(function () {
  "use strict";
  function render(root) {
    if (typeof Plotly === "undefined") { return; }
    var charts = Array.prototype.slice.call(root.querySelectorAll("[data-figure]"));
    if (root.matches && root.matches("[data-figure]")) { charts.push(root); }
    charts.forEach(function (el) {
      var figure = JSON.parse(el.getAttribute("data-figure"));
      Plotly.react(el, figure.data || [], figure.layout || {}, { responsive: true, displaylogo: false });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { render(document); });
  // htmx:load fires on each piece of new content (afterSettle fires on the element that made the
  // request, often the filter form, which holds no chart); the body's own load at start-up is the page's
  document.addEventListener("htmx:load", function (event) {
    if (event.target !== document.body) { render(event.target); }
  });
})();

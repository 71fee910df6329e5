/* Renders every element with data-figure="<Plotly figure JSON>" using Plotly; re-runs on content htmx swaps in.
   (The figure rides in an attribute: htmx, with allowScriptTags false, drops script elements from swapped content.)
   Plotly loads async (runs/partials/_chart_scripts.html), so the page is usable before the library arrives: the
   first drawing waits for both the document and the library, whichever comes last. */
(function () {
  "use strict";
  var library = document.querySelector("script[data-plotly-library]");
  var documentReady = document.readyState !== "loading";
  var libraryReady = typeof Plotly !== "undefined";
  var drawn = false;

  function render(root) {
    if (typeof Plotly === "undefined") { return; }
    var charts = Array.prototype.slice.call(root.querySelectorAll("[data-figure]"));
    if (root.matches && root.matches("[data-figure]")) { charts.push(root); }
    charts.forEach(function (el) {
      var figure = JSON.parse(el.getAttribute("data-figure"));
      Plotly.react(el, figure.data || [], figure.layout || {}, { responsive: true, displaylogo: false });
    });
  }
  function drawOnceBothAreIn() {
    if (drawn || !documentReady || !libraryReady) { return; }
    drawn = true;
    render(document);
  }
  if (!libraryReady && library) {
    library.addEventListener("load", function () { libraryReady = true; drawOnceBothAreIn(); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    documentReady = true;
    libraryReady = libraryReady || typeof Plotly !== "undefined";
    drawOnceBothAreIn();
  });
  drawOnceBothAreIn();
  // htmx:load fires on each piece of new content (afterSettle fires on the element that made the
  // request, often the filter form, which holds no chart); the body's own load at start-up is the page's
  document.addEventListener("htmx:load", function (event) {
    if (event.target !== document.body) { render(event.target); }
  });
})();

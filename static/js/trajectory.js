// The attempt page opened at a message (?at=N, from "go to message", a citation or a search hit):
// bring the marked message into view when the URL has no #anchor that already does.
document.addEventListener("DOMContentLoaded", function () {
  if (window.location.hash) return;
  var marked = document.querySelector(".msg.at, .result.at");
  if (marked) marked.scrollIntoView({block: "center"});
});

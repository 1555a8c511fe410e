(function () {
  "use strict";
  var steps = Array.prototype.slice.call(document.querySelectorAll("details.step"));
  var turns = Array.prototype.slice.call(document.querySelectorAll("section.turn"));
  var input = document.getElementById("search");
  var count = document.getElementById("search-count");

  function filter() {
    var query = input.value.trim().toLowerCase();
    var shown = 0;
    steps.forEach(function (step) {
      var hit = !query || step.textContent.toLowerCase().indexOf(query) >= 0;
      step.classList.toggle("miss", !hit);
      if (hit) {
        shown += 1;
        if (query) {
          step.open = true;
          step.querySelectorAll("details.call, details.fold").forEach(function (inner) {
            if (inner.textContent.toLowerCase().indexOf(query) >= 0) { inner.open = true; }
          });
        }
      }
    });
    turns.forEach(function (turn) {
      var prompt = turn.querySelector(".prompt");
      var own = prompt && prompt.textContent.toLowerCase().indexOf(query) >= 0;
      var any = !query || own || turn.querySelector("details.step:not(.miss)") !== null;
      turn.classList.toggle("miss", !any);
    });
    count.textContent = query ? shown + " of " + steps.length + " steps match" : steps.length + " steps";
  }

  function openAll(open) {
    document.querySelectorAll("details").forEach(function (d) { d.open = open; });
  }

  input.addEventListener("input", filter);
  document.getElementById("expand").addEventListener("click", function () { openAll(true); });
  document.getElementById("collapse").addEventListener("click", function () { openAll(false); });
  document.querySelectorAll("svg.plot").forEach(function (svg) {
    svg.addEventListener("click", function (event) {
      var mark = event.target.closest("[data-step]");
      var step = mark && document.getElementById("step-" + mark.getAttribute("data-step"));
      if (step) {
        step.open = true;
        step.scrollIntoView({ block: "start" });
      }
    });
  });
  filter();
})();

// The dashboard's own behaviour, kept out of the pages so the Content-Security-Policy can
// forbid inline scripts: polling while the tab is visible, confirmations for bulk
// actions, and "select every job on this page".
(function () {
  "use strict";

  function refresh(element) {
    if (window.htmx) {
      window.htmx.trigger(element, "ratchet-poll");
    }
  }

  function poll(element) {
    var every = parseInt(element.getAttribute("data-poll-ms"), 10) || 5000;
    window.setInterval(function () {
      // A hidden tab asks nothing of the store.
      if (document.visibilityState === "visible" && document.body.contains(element)) {
        refresh(element);
      }
    }, every);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      document.querySelectorAll("[data-poll-ms]").forEach(refresh);
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-poll-ms]").forEach(poll);
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) {
          event.preventDefault();
        }
      });
    });
    document.querySelectorAll("input[data-select-all]").forEach(function (box) {
      var form = box.getAttribute("data-select-all");
      box.addEventListener("change", function () {
        document
          .querySelectorAll('input[name="job_id"][form="' + form + '"]')
          .forEach(function (row) {
            row.checked = box.checked;
          });
      });
    });
  });
})();

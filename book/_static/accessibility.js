/* The book's accessibility repairs, in the reader's browser (registered on every page by
 * book/_ext/offline_assets.py; tests/test_accessibility.py audits the result with axe-core).
 *
 * - MathJax 3 with the widget manager, which still typesets through MathJax 2's MathJax.Hub.Queue;
 *   screen readers read formulas from MathJax's hidden MathML;
 * - formulas out of the tab order (inTabOrder: false), but for one too wide for the column, which
 *   scrolls; MathJax's menu opens from a "Formula menu" button in the page's header;
 * - the theme: named sidebar toggles; search fields, folded code cells and the colour-mode button
 *   named by what they show;
 * - the bibliography: a list of list items (not the deprecated doc-biblioentry);
 * - the explorers: every slider named by its visible label and read out as its shown value, toggle
 *   buttons that say which one is on, and a view (.explorer-view) whose changes are announced.
 */
(function () {
  "use strict";

  // ------------------------------------------------------------------ MathJax 2's Hub on MathJax 3
  var config = window.MathJax;
  if (config && !config.version) {
    var waiting = [];
    var typeset = function (element) {
      var mj = window.MathJax;
      if (mj && mj.startup && mj.startup.promise && mj.typesetPromise) {
        mj.startup.promise = mj.startup.promise.then(function () { return mj.typesetPromise([element]); });
      } else {
        waiting.push(element);
      }
    };
    var hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          if (Array.isArray(job) && job[0] === "Typeset" && job[2]) typeset(job[2]);
        });
      },
    };
    config.Hub = hub;
    config.startup = config.startup || {};
    config.startup.ready = function () {
      MathJax.startup.defaultReady();
      MathJax.Hub = hub;
      waiting.splice(0).forEach(typeset);
      // The menu's Accessibility > Activate would load MathJax's explorer, which is not served with the
      // book and, in MathJax 3.2.2, blanks every formula when switched on there (MathJax issue 3124).
      var menu = MathJax.startup.document.menu;
      var activate = menu && menu.menu.findID("Accessibility", "Activate");
      if (activate) activate.disable();
    };
  }

  // ------------------------------------------------------------------ formulas and their menu
  // A formula wider than the column scrolls sideways: that one keeps a Tab stop, to scroll it by keyboard.
  function wideFormulas() {
    var doc = window.MathJax && MathJax.startup && MathJax.startup.document;
    if (doc && doc.menu && doc.menu.settings && doc.menu.settings.inTabOrder) return; // the reader's choice
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (math) {
      var wide = math.scrollWidth > math.clientWidth + 1;
      if (wide && math.getAttribute("tabindex") !== "0") math.setAttribute("tabindex", "0");
      else if (!wide && math.getAttribute("tabindex") === "0") math.setAttribute("tabindex", "-1");
    });
  }

  function formulaMenu() {
    var header = document.querySelector(".article-header-buttons");
    if (!header || header.querySelector(".formula-menu-button") || !document.querySelector("mjx-container")) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "btn btn-sm pst-navbar-icon formula-menu-button";
    button.title = "Formula menu: zoom, MathML and TeX, tab order";
    button.innerHTML = '<span aria-hidden="true">&Sigma;</span><span class="visually-hidden">Formula menu</span>';
    button.addEventListener("click", function () {
      var doc = window.MathJax && MathJax.startup && MathJax.startup.document;
      var menu = doc && doc.menu && doc.menu.menu;
      var first = doc && Array.from(doc.math)[0];
      if (!menu || !first) return;
      menu.mathItem = first; // "Show Math As" and "Copy to Clipboard" act on the page's first formula
      menu.store.active = first.typesetRoot; // where the menu sends focus when it closes...
      menu.unpost = function () {
        delete menu.unpost;
        menu.unpost.apply(menu, arguments);
        button.focus(); // ...and from there back to this button
      };
      var box = button.getBoundingClientRect();
      menu.post(box.left, box.bottom);
    });
    header.appendChild(button);
  }

  // ------------------------------------------------------------------ the theme and the bibliography
  var theme = {
    "nav.bd-links summary:not([aria-label])": function (summary) {
      var link = summary.closest("li").querySelector(":scope > a");
      summary.setAttribute("aria-label", "Sections of " + (link ? link.textContent.trim() : "this chapter"));
    },
    ".search-button-field[aria-label], details.hide > summary[aria-label]": function (control) {
      control.removeAttribute("aria-label"); // named by what it shows: "Search Ctrl+K", "Show code cell source"
    },
    '.citation-list > [role="doc-biblioentry"]': function (entry) {
      entry.setAttribute("role", "listitem");
    },
  };

  function colourMode() {
    // named by the mode its icon shows ("Light", "Dark", "System Settings"), not "Color mode" alone
    var mode = document.documentElement.dataset.mode || "auto";
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      var icon = button.querySelector('.theme-switch[data-mode="' + mode + '"]');
      var shown = icon && (icon.getAttribute("title") || (icon.querySelector("title") || {}).textContent);
      var name = "Color mode: " + (shown || mode);
      if (button.getAttribute("aria-label") !== name) button.setAttribute("aria-label", name);
    });
  }

  // ------------------------------------------------------------------ the explorers
  var uid = 0;

  function labelId(widget) {
    var label = widget.querySelector(":scope > label.widget-label");
    if (!label || !label.textContent.trim()) return null;
    if (!label.id) label.id = "widget-label-" + ++uid;
    return label.id;
  }

  var widgets = {
    ".widget-slider": function (slider) {
      var handle = slider.querySelector(".noUi-handle");
      var readout = slider.querySelector(".widget-readout");
      var id = labelId(slider);
      if (!handle) return;
      if (id && handle.getAttribute("aria-labelledby") !== id) handle.setAttribute("aria-labelledby", id);
      if (readout) {
        var shown = readout.textContent.trim(); // a log slider's handle holds the exponent, not the value
        if (shown && handle.getAttribute("aria-valuetext") !== shown) handle.setAttribute("aria-valuetext", shown);
        if (id && !readout.hasAttribute("aria-labelledby")) {
          readout.setAttribute("role", "textbox");
          readout.setAttribute("aria-labelledby", id);
        }
      }
    },
    ".widget-toggle-buttons": function (group) {
      var id = labelId(group);
      var buttons = group.querySelector(".widget-toggle-button") && group.querySelector(".widget-toggle-button").parentElement;
      if (buttons && id && buttons.getAttribute("role") !== "group") {
        buttons.setAttribute("role", "group");
        buttons.setAttribute("aria-labelledby", id);
      }
      group.querySelectorAll(".widget-toggle-button").forEach(function (button) {
        var pressed = String(button.classList.contains("mod-active"));
        if (button.getAttribute("aria-pressed") !== pressed) button.setAttribute("aria-pressed", pressed);
      });
    },
    '.jupyter-widgets [title="null"]': function (element) {
      element.removeAttribute("title"); // a widget without a tooltip, not one that says "null"
    },
    ".explorer-view:not([aria-live])": function (view) {
      view.setAttribute("aria-live", "polite");
    },
  };

  function repair() {
    [theme, widgets].forEach(function (rules) {
      Object.keys(rules).forEach(function (selector) {
        document.querySelectorAll(selector).forEach(rules[selector]);
      });
    });
    colourMode();
    wideFormulas();
    formulaMenu();
  }

  // Widgets, icons and formulas are drawn after the page loads: repair again after every change.
  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    window.setTimeout(function () {
      pending = false;
      repair();
    }, 50);
  }
  function start() {
    repair();
    new MutationObserver(schedule).observe(document.documentElement, {
      subtree: true, childList: true, attributes: true, attributeFilter: ["class", "data-mode", "aria-valuetext", "tabindex"],
    });
    window.addEventListener("resize", schedule);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// Argo CD's side of the extension contract, as the real UI does it (ui/src/app/shared/services/
// extensions-service.ts): window.extensionsAPI collects registrations; the page then renders the
// tabs registered for argoproj.io/Application with {application, resource, tree} and the
// system-level extensions as sidebar pages.
(function (window) {
  "use strict";
  var h = window.React.createElement;
  var registered = { resources: [], system: [], appViews: [], statusPanels: [] };

  window.extensionsAPI = {
    registerResourceExtension: function (component, group, kind, tabTitle, opts) {
      registered.resources.push({ component: component, group: group, kind: kind, title: tabTitle, icon: opts && opts.icon });
    },
    registerSystemLevelExtension: function (component, title, path, icon) {
      registered.system.push({ component: component, title: title, path: path, icon: icon });
    },
    registerAppViewExtension: function (component, title, icon) {
      registered.appViews.push({ component: component, title: title, icon: icon });
    },
    registerStatusPanelExtension: function (component, title, id, flyout) {
      registered.statusPanels.push({ component: component, title: title, id: id, flyout: flyout });
    },
  };

  // minimatch-like glob for group/kind ("*", "**" and literal names are what extensions use)
  function matches(pattern, value) {
    if (pattern === "*" || pattern === "**") return true;
    var regex = new RegExp("^" + pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*") + "$");
    return regex.test(value);
  }

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    });
  }

  function link(href, text, current) {
    return h("a", { href: href, className: current ? "current" : "" }, text);
  }

  function render(apps, params) {
    var view = params.get("view");
    var selected = params.get("app");
    var nav = [h("h5", { key: "a" }, "Applications")];
    apps.forEach(function (a) {
      var id = a.metadata.namespace + "/" + a.metadata.name;
      nav.push(h("div", { key: id }, link("/?app=" + encodeURIComponent(id), id, !view && id === selected)));
    });
    nav.push(h("h5", { key: "s" }, "Extensions"));
    registered.system.forEach(function (ext) {
      var name = ext.path.replace(/^\//, "");
      nav.push(h("div", { key: "x" + name }, link("/?view=" + encodeURIComponent(name), ext.title, view === name)));
    });
    window.ReactDOM.createRoot(document.getElementById("nav")).render(h(window.React.Fragment, null, nav));

    var content;
    if (view) {
      var ext = registered.system.filter(function (e) { return e.path.replace(/^\//, "") === view; })[0];
      content = ext ? h("div", { className: "panel", "data-testid": "system-extension" }, h(ext.component, {}))
                    : h("p", null, "No system-level extension at /" + view);
    } else {
      var app = apps.filter(function (a) { return a.metadata.namespace + "/" + a.metadata.name === selected; })[0];
      if (!app) {
        content = h("p", null, selected ? "No application " + selected + " (or you may not read it)." : "Choose an application.");
      } else {
        var tabs = registered.resources.filter(function (e) { return matches(e.group, "argoproj.io") && matches(e.kind, "Application"); });
        var props = { application: app, resource: app, tree: { nodes: [] } };
        content = h("div", { className: "panel", "data-testid": "application-panel" },
          h("div", { className: "tabs" }, ["Summary", "Parameters", "Manifest"].map(function (t) { return h("span", { key: t }, t); })
            .concat(tabs.map(function (t) { return h("span", { key: "t" + t.title, className: "current" }, t.title); }))),
          tabs.map(function (t) { return h(t.component, Object.assign({ key: t.title }, props)); }));
      }
    }
    var note = h("p", { className: "host-note" },
      "Registered: " + registered.resources.length + " resource tab(s), " + registered.appViews.length + " app view(s), " +
      registered.system.length + " system-level view(s).");
    window.ReactDOM.createRoot(document.getElementById("root")).render(h(window.React.Fragment, null, note, content));
  }

  window.finopsHost = {
    registered: registered,
    start: function () {
      var params = new URLSearchParams(window.location.search);
      getJSON("/api/v1/applications").then(function (body) {
        var apps = body.items || [];
        apps.sort(function (a, b) {
          return (a.metadata.namespace + "/" + a.metadata.name).localeCompare(b.metadata.namespace + "/" + b.metadata.name);
        });
        if (!params.get("app") && !params.get("view") && apps.length) {
          params.set("app", "argocd/web");
        }
        render(apps, params);
      }, function (err) {
        document.getElementById("root").textContent = "Could not list applications: " + err.message;
      });
    },
  };
})(window);

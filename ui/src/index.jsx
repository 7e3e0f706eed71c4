// Registers the finops views with Argo CD's global extensionsAPI (Argo CD 2.6+ and 3.x):
// - a tab on the Application resource (group argoproj.io, kind Application): Argo CD shows it in
//   the application's details panel; this is the API every supported version has;
// - the same component as an application view (registerAppViewExtension, Argo CD 2.10+), when
//   the running Argo CD offers it;
// - the cluster view in the sidebar (registerSystemLevelExtension).
// Components use hooks only (React 16.8+), so they run on the React of any supported Argo CD.
import { AppTab } from "./AppTab.jsx";
import { ClusterView } from "./ClusterView.jsx";

((window) => {
  const api = window.extensionsAPI;
  if (!api || typeof api.registerResourceExtension !== "function") {
    console.warn("finops: window.extensionsAPI is missing; the extension is not registered");
    return;
  }
  api.registerResourceExtension(AppTab, "argoproj.io", "Application", "Cost", { icon: "fa-coins" });
  if (typeof api.registerAppViewExtension === "function") {
    api.registerAppViewExtension(AppTab, "Cost", "fa-coins");
  }
  if (typeof api.registerSystemLevelExtension === "function") {
    api.registerSystemLevelExtension(ClusterView, "Costs", "/finops", "fa-coins");
  }
})(window);

// Builds dist/extension-finops.js: one IIFE that registers with Argo CD's global `extensionsAPI`.
// React is never bundled: JSX compiles to the global `React.createElement` that Argo CD's UI
// provides, and an import of "react" resolves to that same global (the shim below), never to
// node_modules (which holds React only for the local host page, sandbox/argocd_host).
// The output is deterministic, so tests/deploy/test_ui_extension.py can check that the file
// checked in is exactly what this build produces from the sources.
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const globalReact = {
  name: "global-react",
  setup(build) {
    build.onResolve({ filter: /^react$/ }, () => ({ path: "react", namespace: "global-react" }));
    build.onLoad({ filter: /.*/, namespace: "global-react" }, () => ({ contents: "module.exports = window.React;" }));
  },
};

const here = path.dirname(fileURLToPath(import.meta.url));
const outfile = process.argv[2] || path.join(here, "dist", "extension-finops.js");

await esbuild.build({
  absWorkingDir: here, // the path comments in the output are relative to it: the same from any directory
  entryPoints: [path.join(here, "src", "index.jsx")],
  outfile,
  bundle: true,
  format: "iife",
  target: ["es2019"],
  platform: "browser",
  jsxFactory: "React.createElement",
  jsxFragment: "React.Fragment",
  plugins: [globalReact],
  minify: false,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
  banner: {
    js: "// finops Argo CD UI extension (built from ui/src by ui/build.mjs; do not edit). Uses Argo CD's global React.",
  },
});

// Every call goes through Argo CD's proxy extension (/extensions/finops/...), which authenticates
// the user's session cookie, checks RBAC for the application named in Argocd-Application-Name
// (and its project, Argocd-Project-Name) and for `extensions, invoke, finops`, then forwards the
// request to cost_api with the secret header cost_api requires. The UI only names the application.

export const PROXY = "/extensions/finops/api/v1";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function errorOf(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "string") return new ApiError(response.status, body.error);
    if (body && typeof body.message === "string") return new ApiError(response.status, body.message);
  } catch (_) {
    // not JSON: Argo CD's own proxy errors are plain text
  }
  return new ApiError(response.status, text.trim().slice(0, 300) || response.statusText);
}

async function getJSON(url, headers) {
  let response;
  try {
    response = await fetch(url, { headers: { Accept: "application/json", ...headers }, credentials: "same-origin" });
  } catch (exc) {
    throw new ApiError(0, `could not reach Argo CD (${exc && exc.message ? exc.message : exc})`);
  }
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

/** `app`: {namespace, name, project}; `path` below /api/v1 of cost_api, e.g. `/namespaces`. */
export function costApi(path, app) {
  return getJSON(PROXY + path, {
    "Argocd-Application-Name": `${app.namespace}:${app.name}`,
    "Argocd-Project-Name": app.project,
  });
}

/**
 * Argo CD's own API (the user's session): the application, or null when the user may not read it.
 * Asked of the list filtered by name, which answers 200 with what RBAC lets the user see; a GET
 * of the one application would answer 403, which the browser logs as a console error.
 */
export async function argoApplication(namespace, name) {
  const query = new URLSearchParams({ name, appNamespace: namespace });
  const body = await getJSON(`/api/v1/applications?${query}`, {});
  const items = (body && body.items) || [];
  return items.find((a) => a.metadata && a.metadata.namespace === namespace && a.metadata.name === name) || null;
}

/** The cost_api path of an application's own route, e.g. appPath(app, "actual"). */
export function appPath(app, route, query) {
  const base = `/apps/${encodeURIComponent(app.namespace)}/${encodeURIComponent(app.name)}/${route}`;
  return query ? `${base}?${new URLSearchParams(query)}` : base;
}

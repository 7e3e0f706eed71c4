// Loading, empty and error states, explicit and testable (data-testid), and the hook that loads.

/** Run `load()` (a promise) when `deps` change: {status: "loading" | "ok" | "error", data, error}. */
export function useLoad(load, deps) {
  const [state, setState] = React.useState({ status: "loading" });
  React.useEffect(() => {
    let live = true;
    setState({ status: "loading" });
    load().then(
      (data) => live && setState({ status: "ok", data }),
      (error) => live && setState({ status: "error", error }),
    );
    return () => {
      live = false;
    };
  }, deps);
  return state;
}

export function Loading({ what }) {
  return (
    <p className="finops-loading" data-testid="loading">
      Loading {what}…
    </p>
  );
}

/** A settled error. `empty` is the message for 404 (no data yet), which is a state, not a failure. */
export function Problem({ error, what, empty, testid }) {
  const status = error && typeof error.status === "number" ? error.status : 0;
  const detail = error && error.message ? error.message : String(error);
  if (status === 404 && empty) {
    return (
      <p className="finops-empty" data-testid={`${testid}-empty`}>
        {empty}
      </p>
    );
  }
  let text;
  if (status === 401 || status === 403) {
    text = `You are not allowed to see ${what} (HTTP ${status}): ${detail}`;
  } else if (status === 503) {
    text = `The cost service is unavailable right now (HTTP 503), so ${what} cannot be shown: ${detail}. Try again in a minute.`;
  } else if (status === 0) {
    text = `Could not load ${what}: ${detail}`;
  } else {
    text = `Could not load ${what} (HTTP ${status}): ${detail}`;
  }
  return (
    <p className="finops-error" role="alert" data-testid={`${testid}-error`} data-status={status} style={styles.error}>
      {text}
    </p>
  );
}

export const styles = {
  tab: { padding: "12px 16px", fontSize: "14px", lineHeight: 1.5, maxWidth: "900px" },
  section: { marginBottom: "18px" },
  figures: { display: "flex", flexWrap: "wrap", gap: "24px", margin: "8px 0" },
  figure: { minWidth: "160px" },
  figureLabel: { fontSize: "12px", color: "#6d7f8b", textTransform: "uppercase" },
  figureValue: { fontSize: "20px", fontWeight: 600 },
  badge: {
    display: "inline-block",
    padding: "1px 8px",
    marginRight: "8px",
    borderRadius: "10px",
    fontSize: "12px",
    background: "#dee6eb",
    color: "#363c4a",
  },
  notice: { padding: "10px 12px", borderLeft: "4px solid #f4c030", background: "#fdf6e3" },
  error: { padding: "10px 12px", borderLeft: "4px solid #e96d76", background: "#fcebec" },
  table: { borderCollapse: "collapse", margin: "6px 0" },
  cell: { padding: "3px 12px 3px 0", textAlign: "left", borderBottom: "1px solid #eef1f3" },
  number: { padding: "3px 12px 3px 0", textAlign: "right", borderBottom: "1px solid #eef1f3", whiteSpace: "nowrap" },
  muted: { color: "#6d7f8b" },
  warning: { color: "#a35d00" },
  alertBadge: { display: "inline-block", padding: "1px 8px", marginRight: "8px", borderRadius: "10px", fontSize: "12px", background: "#fcebec", color: "#a3212c" },
  calmBadge: { display: "inline-block", padding: "1px 8px", marginRight: "8px", borderRadius: "10px", fontSize: "12px", background: "#e3f4ea", color: "#1e6b3a" },
};

/** A card of the tab: its title, then loading, the error (or the 404 `empty` state), or `children(data)`. */
export function Card({ title, state, what, testid, empty, children }) {
  return (
    <section style={styles.section} data-testid={`${testid}-card`}>
      <h4>{title}</h4>
      {state.status === "loading" ? <Loading what={what} /> : null}
      {state.status === "error" ? <Problem error={state.error} what={what} testid={testid} empty={empty} /> : null}
      {state.status === "ok" ? children(state.data) : null}
    </section>
  );
}

/** A muted line: a state that is not an error (nothing to show, a feature not available). */
export function Note({ testid, children }) {
  return (
    <p style={styles.muted} data-testid={testid}>
      {children}
    </p>
  );
}

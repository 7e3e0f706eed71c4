// Cards that read the cluster's workloads: rightsizing from VerticalPodAutoscalers (/rightsizing)
// and pods no Argo CD application owns (/orphaned-pods, per application and cluster-wide).
import { formatChange, formatMoney } from "./money.js";
import { Note, styles } from "./states.jsx";

const RESOURCES = [
  ["cpu", "CPU"],
  ["memory", "Memory"],
];

/** The one currency of `values` (nulls ignored), else `fallback`. */
function oneCurrency(values, fallback) {
  const found = [...new Set(values.filter(Boolean))];
  return found.length === 1 ? found[0] : fallback;
}

function ContainerLines({ vpa, container, currency }) {
  const lines = RESOURCES.filter(([key]) => container[key]);
  return (
    <>
      {lines.map(([key, label], i) => {
        const line = container[key];
        return (
          <tr
            key={`${container.container}/${key}`}
            data-testid="rs-line"
            data-vpa={vpa.name}
            data-container={container.container}
            data-resource={key}
          >
            <td style={styles.cell}>
              {i === 0 ? container.container : ""}
              {i === 0 && container.settled === false ? (
                <span style={{ ...styles.badge, marginLeft: "6px" }} data-testid="rs-low-confidence" title="upper bound above 3x the target">
                  low confidence
                </span>
              ) : null}
            </td>
            <td style={styles.cell}>{label}</td>
            <td style={styles.number} data-testid="rs-current">
              {line.currentQuantity || "—"}
            </td>
            <td style={styles.number}>→</td>
            <td style={styles.number} data-testid="rs-suggested">
              {line.suggestedQuantity || "—"}
            </td>
            <td style={styles.number} data-testid="rs-monthly">
              {formatChange(line.monthly, currency)}
            </td>
          </tr>
        );
      })}
    </>
  );
}

function Vpa({ vpa, fallback }) {
  const title = `${vpa.name} → ${vpa.targetRef ? `${vpa.targetRef.kind} ${vpa.targetRef.name}` : "?"}`;
  if (vpa.managed) {
    return (
      <div data-testid="rightsizing-vpa" data-vpa={vpa.name} data-managed="true" style={styles.section}>
        <strong>{title}</strong>{" "}
        <span style={styles.badge} data-testid="vpa-managed">
          VPA applies this (mode {vpa.updateMode})
        </span>
      </div>
    );
  }
  const currency = vpa.currency || fallback;
  const containers = vpa.containers || [];
  const warnings = [...(vpa.warnings || []), ...containers.flatMap((c) => c.warnings || [])];
  return (
    <div data-testid="rightsizing-vpa" data-vpa={vpa.name} data-managed="false" style={styles.section}>
      <strong>{title}</strong> (mode {vpa.updateMode}): <span data-testid="vpa-monthly">{formatChange(vpa.monthly, currency)}</span>{" "}
      a month
      {containers.length > 0 ? (
        <table style={styles.table}>
          <thead>
            <tr>
              <th style={styles.cell}>Container</th>
              <th style={styles.cell}>Resource</th>
              <th style={styles.number}>Current request</th>
              <th style={styles.number} />
              <th style={styles.number}>Suggested</th>
              <th style={styles.number}>Monthly change</th>
            </tr>
          </thead>
          <tbody>
            {containers.map((c) => (
              <ContainerLines key={c.container} vpa={vpa} container={c} currency={currency} />
            ))}
          </tbody>
        </table>
      ) : null}
      {warnings.length > 0 ? (
        <ul style={{ margin: "2px 0" }}>
          {warnings.map((w) => (
            <li key={w} style={styles.warning} data-testid="rs-warning">
              {w}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Rightsizing({ data, currency }) {
  if (data.available === false) {
    return <Note testid="rightsizing-unavailable">Rightsizing is not available here: {data.reason}.</Note>;
  }
  const vpas = data.vpas || [];
  if (vpas.length === 0) {
    return (
      <Note testid="rightsizing-empty">
        No VerticalPodAutoscaler in {data.destinationNamespace} targets this application's workloads.
      </Note>
    );
  }
  const advice = vpas.filter((v) => !v.managed);
  const total = oneCurrency(
    advice.map((v) => v.currency),
    currency,
  );
  const days = data.window && data.window.days;
  return (
    <div data-testid="rightsizing" data-currency={total || ""}>
      <p data-testid="rightsizing-header">
        Requests as the VPAs suggest would change the bill by{" "}
        <strong data-testid="rightsizing-monthly">{formatChange(data.monthly, total)}</strong> a month (negative: a
        saving), priced from the stored rows of the last {days} days{total ? `, in ${total}` : ""}.
      </p>
      {vpas.map((v) => (
        <Vpa key={v.name} vpa={v} fallback={total} />
      ))}
    </div>
  );
}

function ownerText(owner) {
  return owner ? `${owner.kind} ${owner.name}` : "bare pod";
}

export function OrphanedPods({ data, currency, where }) {
  if (data.available === false) {
    return <Note testid="orphans-unavailable">Orphaned pods cannot be listed here: {data.reason}.</Note>;
  }
  const pods = data.pods || [];
  const days = data.window && data.window.days;
  if (pods.length === 0) {
    return (
      <Note testid="orphans-empty">
        No orphaned pods in {where}: every pod there belongs to an Argo CD application.
      </Note>
    );
  }
  const total = oneCurrency(
    pods.map((p) => p.currency),
    currency,
  );
  return (
    <table style={styles.table} data-testid="orphans">
      <caption style={{ ...styles.muted, textAlign: "left" }}>
        Pods no Argo CD application owns, with their cost over the last {days} days
      </caption>
      <thead>
        <tr>
          <th style={styles.cell}>Namespace</th>
          <th style={styles.cell}>Pod</th>
          <th style={styles.cell}>Owner</th>
          <th style={styles.cell}>Phase</th>
          <th style={styles.number}>Cost</th>
          <th style={styles.number}>Hours</th>
        </tr>
      </thead>
      <tbody>
        {pods.map((p) => (
          <tr key={`${p.namespace}/${p.pod}`} data-testid="orphan-row" data-namespace={p.namespace} data-pod={p.pod}>
            <td style={styles.cell}>{p.namespace}</td>
            <td style={styles.cell}>{p.pod}</td>
            <td style={styles.cell} data-testid="orphan-owner">
              {ownerText(p.owner)}
            </td>
            <td style={styles.cell}>{p.phase || "—"}</td>
            <td style={styles.number} data-testid="orphan-cost">
              {formatMoney(p.cost, p.currency || total)}
            </td>
            <td style={styles.number} data-testid="orphan-hours">
              {p.hours}
            </td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th style={styles.cell}>Total</th>
          <td colSpan={3} />
          <td style={styles.number} data-testid="orphans-total">
            {formatMoney(data.total, total)}
          </td>
          <td />
        </tr>
      </tfoot>
    </table>
  );
}

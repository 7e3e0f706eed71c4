// The cluster view (Argo CD's sidebar): namespaces with owner and cost, the month's chargeback
// (idle and shared as the policy says), the GPUs (each model's idle on its own line) and kg CO2e per
// team and namespace beside cost over 30 days, the anomaly ranking, the idle spend ranking, orphaned
// pods across the managed namespaces and the unlabelled namespaces.
// Cluster-wide reads are authorised by the gate application (cost_api's CLUSTER_SCOPE_APP): the
// calls name it in Argocd-Application-Name, so only those who may read it see anything.
import { ApiError, argoApplication, costApi } from "./api.js";
import { ClusterCarbon, ClusterGpus, DAYS } from "./GpusCarbon.jsx";
import { formatMoney } from "./money.js";
import { Loading, Problem, styles, useLoad } from "./states.jsx";
import { OrphanedPods } from "./Workloads.jsx";

/** The gate application, "namespace:name": EXTENSION_JS_VARS {"gate_app": ...} of the installer. */
export function gateApp() {
  const vars = (typeof window !== "undefined" && window.FINOPS_VARS) || {};
  const [namespace, name] = String(vars.GATE_APP || "argocd:cost-gate").split(":");
  return { namespace, name };
}

async function loadGate() {
  const gate = gateApp();
  const found = await argoApplication(gate.namespace, gate.name);
  if (!found) throw new ApiError(403, "Argo CD lists no such application for you");
  return { ...gate, project: (found && found.spec && found.spec.project) || "default" };
}

function Namespaces({ data, currency }) {
  const rows = data.namespaces || [];
  if (rows.length === 0) return <p data-testid="namespaces-empty">No namespace cost in the last {data.days} days.</p>;
  return (
    <table style={styles.table} data-testid="namespaces">
      <thead>
        <tr>
          <th style={styles.cell}>Namespace</th>
          <th style={styles.cell}>Owner</th>
          <th style={styles.cell}>Cost centre</th>
          <th style={styles.number}>Cost, {data.days} days</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.namespace} data-testid="namespace-row" data-namespace={r.namespace}>
            <td style={styles.cell}>{r.namespace}</td>
            <td style={styles.cell}>{r.owner || <em style={styles.muted}>unlabelled</em>}</td>
            <td style={styles.cell}>{r.costCenter || "—"}</td>
            <td style={styles.number} data-testid="namespace-cost">
              {formatMoney(r.cost, currency)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Unlabelled({ data, currency }) {
  const rows = (data.namespaces || []).filter((r) => !r.owner);
  if (rows.length === 0) return <p data-testid="unlabelled-none">Every namespace has an owner label.</p>;
  return (
    <ul data-testid="unlabelled">
      {rows.map((r) => (
        <li key={r.namespace} data-testid="unlabelled-row">
          {r.namespace}: {formatMoney(r.cost, currency)}
        </li>
      ))}
    </ul>
  );
}

function policyText(policy) {
  if (!policy) return "";
  const idle =
    policy.idle === "separate"
      ? `idle capacity is its own line, owned by ${policy.idle_owner} (option B)`
      : "idle capacity is spread over the owners in proportion to their cost (option A)";
  const shared = policy.shared || {};
  const sharedNs = (shared.namespaces || []).join(", ") || "none";
  const split = shared.split === "even" ? "evenly over the lines" : "in proportion to each line's allocated cost";
  return `Policy: ${idle}; shared costs (namespaces: ${sharedNs}; fixed costs: ${(shared.fixed || []).length}) are split ${split}.`;
}

// What the figures stand on: OpenCost's estimate, or the cloud invoice for the days it covers.
function basisText(data) {
  const basis = data.basis || "estimate";
  if (basis === "estimate") return "Basis: estimate (measured at the price book's or list prices).";
  const clusters = (data.reconciliation && data.reconciliation.clusters) || [];
  const parts = clusters.map((c) => {
    const billed = (c.billed_days || []).map((r) => `${r.start} to ${r.end}`).join(", ") || "no day";
    return `${c.cluster}: billed ${billed} (excluded ends), ${c.estimated_hours} hours still estimated, unreconciled ${formatMoney(c.unreconciled, data.currency)}`;
  });
  return `Basis: ${basis} (the cloud invoice). ${parts.join("; ")}`.trim();
}

function Chargeback({ data }) {
  const currency = data.currency;
  return (
    <div data-testid="chargeback" data-currency={currency}>
      <p style={styles.muted} data-testid="chargeback-policy">
        {data.period && data.period.start
          ? `${String(data.period.start).slice(0, 10)} to ${String(data.period.end).slice(0, 10)} (excluded), ${data.currency}. `
          : ""}
        {policyText(data.policy)}
      </p>
      <p style={styles.muted} data-testid="chargeback-basis" data-basis={data.basis || "estimate"}>
        {basisText(data)}
      </p>
      <table style={styles.table}>
        <thead>
          <tr>
            <th style={styles.cell}>Owner</th>
            <th style={styles.number}>Allocated</th>
            <th style={styles.number}>Idle</th>
            <th style={styles.number}>Shared</th>
            <th style={styles.number}>Total</th>
          </tr>
        </thead>
        <tbody>
          {(data.lines || []).map((line) => (
            <tr key={line.owner} data-testid="chargeback-line" data-owner={line.owner}>
              <td style={styles.cell}>{line.owner}</td>
              <td style={styles.number}>{formatMoney(line.allocated, currency)}</td>
              <td style={styles.number}>{formatMoney(line.idle, currency)}</td>
              <td style={styles.number}>{formatMoney(line.shared, currency)}</td>
              <td style={styles.number} data-testid="chargeback-total">
                {formatMoney(line.total, currency)}
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th style={styles.cell}>Total</th>
            <td colSpan={3} />
            <td style={styles.number} data-testid="chargeback-sum">
              {formatMoney(data.total, currency)}
            </td>
          </tr>
        </tfoot>
      </table>
    </div>
  );
}

function IdleRanking({ data, currency }) {
  const rows = data.applications || [];
  if (rows.length === 0) return <p data-testid="idle-ranking-empty">No application-scope record yet to rank.</p>;
  return (
    <ol data-testid="idle-ranking">
      {rows.map((r) => (
        <li key={`${r.app.namespace}/${r.app.name}`} data-testid="idle-row">
          {r.app.namespace}/{r.app.name} ({r.destinationNamespace}): {formatMoney(r.workloadIdleMonthly, currency)} idle a
          month of {formatMoney(r.monthly, currency)}
        </li>
      ))}
    </ol>
  );
}

function AnomalyRanking({ data, currency }) {
  const rows = data.applications || [];
  if (rows.length === 0) return <p data-testid="anomaly-ranking-empty">No application has a cost record yet to score.</p>;
  return (
    <>
      <p style={styles.muted} data-testid="anomaly-summary">
        {data.anomalous} anomalous of {data.scored} scored (anomalous from a score of {data.threshold}); the rest have
        no score yet, with the reason.
      </p>
      <table style={styles.table} data-testid="anomaly-ranking">
        <thead>
          <tr>
            <th style={styles.cell}>Application</th>
            <th style={styles.number}>Score</th>
            <th style={styles.number}>Today, per day</th>
            <th style={styles.number}>Baseline median</th>
            <th style={styles.cell} />
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const a = r.anomaly || {};
            const money = (value) => formatMoney(value, a.currency || currency);
            const scored = a.score !== null && a.score !== undefined;
            return (
              <tr
                key={`${r.app.namespace}/${r.app.name}`}
                data-testid="anomaly-row"
                data-app={`${r.app.namespace}/${r.app.name}`}
                data-anomalous={String(a.anomalous === true)}
              >
                <td style={styles.cell}>
                  {r.app.namespace}/{r.app.name} <span style={styles.muted}>({r.destinationNamespace})</span>
                </td>
                <td style={styles.number} data-testid="anomaly-row-score">
                  {scored ? a.score : "—"}
                </td>
                <td style={styles.number}>{scored ? money(a.runRatePerDay) : ""}</td>
                <td style={styles.number}>{a.baseline && a.baseline.median ? money(a.baseline.median) : ""}</td>
                <td style={styles.cell} data-testid="anomaly-row-note">
                  {a.anomalous ? (
                    <span style={styles.alertBadge}>anomalous</span>
                  ) : scored ? (
                    ""
                  ) : (
                    <span style={styles.muted}>{a.reason}</span>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

function Section({ title, state, what, testid, empty, children }) {
  return (
    <section style={styles.section}>
      <h4>{title}</h4>
      {state.status === "loading" ? <Loading what={what} /> : null}
      {state.status === "error" ? <Problem error={state.error} what={what} testid={testid} empty={empty} /> : null}
      {state.status === "ok" ? children(state.data) : null}
    </section>
  );
}

function Reports({ gate }) {
  const key = `${gate.namespace}/${gate.name}/${gate.project}`;
  const namespaces = useLoad(() => costApi("/namespaces?days=30", gate), [key]);
  const chargeback = useLoad(() => costApi("/chargeback", gate), [key]);
  const ranking = useLoad(() => costApi("/idle-ranking?limit=10", gate), [key]);
  const anomalies = useLoad(() => costApi("/anomalies?limit=20", gate), [key]);
  const orphans = useLoad(() => costApi("/orphaned-pods", gate), [key]);
  const gpus = useLoad(() => costApi(`/gpus?days=${DAYS}`, gate), [key]);
  const carbonByTeam = useLoad(() => costApi(`/carbon?days=${DAYS}&by=team`, gate), [key]);
  const carbonByNamespace = useLoad(() => costApi(`/carbon?days=${DAYS}&by=namespace`, gate), [key]);
  // One cluster, one currency: the chargeback's (its policy's) labels every amount of the view.
  const currency = chargeback.status === "ok" ? chargeback.data.currency : null;
  return (
    <>
      <Section title="Namespaces, last 30 days" state={namespaces} what="the namespaces" testid="namespaces">
        {(data) => <Namespaces data={data} currency={currency} />}
      </Section>
      <Section
        title="This month's chargeback"
        state={chargeback}
        what="the chargeback"
        testid="chargeback"
        empty="No chargeback: the cost API has no policy (POLICY_PATH) or no data for this month."
      >
        {(data) => <Chargeback data={data} />}
      </Section>
      <Section title={`GPUs, last ${DAYS} days`} state={gpus} what="the GPUs" testid="gpus">
        {(data) => <ClusterGpus data={data} />}
      </Section>
      <section style={styles.section}>
        <h4>Emissions beside cost, last {DAYS} days</h4>
        <ClusterCarbon team={carbonByTeam} namespace={carbonByNamespace} />
      </section>
      <Section title="Anomalies today" state={anomalies} what="the anomaly ranking" testid="anomaly-ranking">
        {(data) => <AnomalyRanking data={data} currency={currency} />}
      </Section>
      <Section title="Idle spend ranking" state={ranking} what="the idle ranking" testid="idle-ranking">
        {(data) => <IdleRanking data={data} currency={currency} />}
      </Section>
      <Section title="Orphaned pods" state={orphans} what="the orphaned pods" testid="orphans">
        {(data) => <OrphanedPods data={data} currency={currency} where="the managed namespaces" />}
      </Section>
      <Section title="Unlabelled namespaces" state={namespaces} what="the namespaces" testid="unlabelled">
        {(data) => <Unlabelled data={data} currency={currency} />}
      </Section>
    </>
  );
}

export function ClusterView() {
  const gate = useLoad(loadGate, []);
  const named = gateApp();
  return (
    <div style={styles.tab} data-testid="finops-cluster-view">
      <h3 style={{ marginTop: 0 }}>Cluster costs</h3>
      {gate.status === "loading" ? <Loading what="your access" /> : null}
      {gate.status === "error" ? (
        [401, 403, 404].includes(gate.error.status) ? (
          <p style={styles.error} role="alert" data-testid="forbidden">
            Cluster-wide costs are shown only to those who may read the application {named.namespace}/{named.name}, and you
            may not ({gate.error.message}). Ask an Argo CD administrator for read access to it.
          </p>
        ) : (
          <Problem error={gate.error} what="your access to the cluster view" testid="gate" />
        )
      ) : null}
      {gate.status === "ok" ? <Reports gate={gate.data} /> : null}
    </div>
  );
}

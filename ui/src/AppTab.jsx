// The application tab: the latest cost record (monthly projection, last 24 h, breakdown, workload
// idle and efficiency), today's anomaly score, the change since the previous sync, the daily chart,
// its GPUs and kg CO2e beside its cost over 30 days, rightsizing from VPAs, orphaned pods in its
// namespace and the cloud estimates CI pushed; above
// them, a notice when the data explains a missing or partial figure.
import { appPath, costApi } from "./api.js";
import { Chart } from "./Chart.jsx";
import { AppGpusCarbon, DAYS } from "./GpusCarbon.jsx";
import { Anomaly, CloudEstimates, DataQuality } from "./Insights.jsx";
import { formatChange, formatMoney, formatRatio } from "./money.js";
import { Card, Loading, Note, Problem, styles, useLoad } from "./states.jsx";
import { OrphanedPods, Rightsizing } from "./Workloads.jsx";

// The rule the sync webhook applies (finops/applications.py LOCAL_SERVERS, LOCAL_NAMES): an
// application deploys to this cluster when its destination server is empty or the in-cluster URL
// and its destination name empty or "in-cluster". Anything else is another cluster: not measured.
const LOCAL_SERVERS = ["", "https://kubernetes.default.svc"];
const LOCAL_NAMES = ["", "in-cluster"];

export function isLocal(destination) {
  const d = destination || {};
  return LOCAL_SERVERS.includes(d.server || "") && LOCAL_NAMES.includes(d.name || "");
}

export function identityOf(application) {
  const meta = (application && application.metadata) || {};
  const spec = (application && application.spec) || {};
  return { namespace: meta.namespace || "argocd", name: meta.name || "", project: spec.project || "default" };
}

/** "23.9841666…" hours as "24.0"; a dash when not a number. */
function formatHours(value) {
  const hours = Number(value);
  return Number.isFinite(hours) ? hours.toFixed(1) : "—";
}

const RESOURCES = [
  ["cpu", "CPU"],
  ["ram", "Memory"],
  ["gpu", "GPU"],
  ["pv", "Storage"],
  ["network", "Network"],
  ["lb", "Load balancers"],
];

function Figure({ label, value, testid, note }) {
  return (
    <div style={styles.figure}>
      <div style={styles.figureLabel}>{label}</div>
      <div style={styles.figureValue} data-testid={testid}>
        {value}
      </div>
      {note ? <div style={styles.muted}>{note}</div> : null}
    </div>
  );
}

function ScopeLabel({ actual }) {
  const text =
    actual.scope === "application"
      ? `Application scope: this application's own pods in namespace ${actual.destinationNamespace}.`
      : `Namespace scope: every pod in namespace ${actual.destinationNamespace}, which may include other applications' (this application's own pods could not be told apart).`;
  return (
    <p data-testid="scope-label" data-scope={actual.scope}>
      <span style={styles.badge}>{actual.scope === "application" ? "application scope" : "namespace scope"}</span>
      {text}
    </p>
  );
}

function Actual({ actual, currency }) {
  const figures = actual.scope === "application" && actual.application ? actual.application : actual.namespace;
  const breakdown = figures.breakdown || {};
  const efficiency = figures.efficiency || {};
  return (
    <section style={styles.section} data-testid="actual">
      <ScopeLabel actual={actual} />
      {actual.measuredAtInstall ? (
        <p data-testid="install-label">
          <span style={styles.badge}>measured at install</span>
          This figure was taken when finops was installed, not after a sync; it is never the baseline of a change.
        </p>
      ) : null}
      <div style={styles.figures}>
        <Figure label="Monthly projection" value={formatMoney(figures.monthly, currency)} testid="monthly" />
        <Figure
          label="Last 24 h"
          value={formatMoney(figures.cost, currency)}
          testid="last-24h"
          note={`measured over ${formatHours(actual.measuredHours)} h`}
        />
        <Figure
          label="Workload idle (24 h)"
          value={formatMoney(figures.workloadIdle, currency)}
          testid="idle"
          note={`${formatMoney(figures.workloadIdleMonthly, currency)} a month`}
        />
        <Figure
          label="Efficiency"
          value={formatRatio(efficiency.total)}
          testid="efficiency"
          note={`CPU ${formatRatio(efficiency.cpu)}, memory ${formatRatio(efficiency.ram)}`}
        />
      </div>
      <table style={styles.table} data-testid="breakdown">
        <caption style={{ ...styles.muted, textAlign: "left" }}>Last 24 h by resource</caption>
        <tbody>
          {RESOURCES.filter(([key]) => key in breakdown).map(([key, label]) => (
            <tr key={key}>
              <th style={styles.cell}>{label}</th>
              <td style={styles.number} data-testid={`breakdown-${key}`}>
                {formatMoney(breakdown[key], currency)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p style={styles.muted} data-testid="measured">
        Measured {actual.measuredOn === "install" ? "at install" : "after the sync"} of revision{" "}
        {actual.revision ? actual.revision.slice(0, 12) : "(unknown)"} at {actual.measuredAt}.
      </p>
    </section>
  );
}

function Trend({ trend, currency }) {
  if (!trend.change || !trend.previous) {
    return (
      <p data-testid="trend-none">
        No earlier sync of the same scope to compare with yet (a measurement at install is never a baseline).
      </p>
    );
  }
  const percent = trend.change.percent === null ? "" : ` (${trend.change.percent.startsWith("-") ? "" : "+"}${trend.change.percent} %)`;
  return (
    <p data-testid="trend">
      Since the previous sync (revision {trend.previous.revision ? trend.previous.revision.slice(0, 12) : "unknown"}):{" "}
      <strong data-testid="trend-change">{formatChange(trend.change, currency)}</strong>
      {percent} a month, from {formatMoney(trend.previous.monthly, currency)} to {formatMoney(trend.latest.monthly, currency)}.
    </p>
  );
}

export function AppTab(props) {
  const application = props.application || props.resource;
  const app = identityOf(application);
  const destination = (application && application.spec && application.spec.destination) || {};
  const key = `${app.namespace}/${app.name}/${app.project}`;
  const remote = !isLocal(destination);
  const skip = () => Promise.resolve(null);
  const actual = useLoad(() => (remote ? skip() : costApi(appPath(app, "actual"), app)), [key, remote]);
  const trend = useLoad(() => (remote ? skip() : costApi(appPath(app, "trend"), app)), [key, remote]);
  const daily = useLoad(() => (remote ? skip() : costApi(appPath(app, "daily", { days: 30 }), app)), [key, remote]);
  const rightsizing = useLoad(() => (remote ? skip() : costApi(appPath(app, "rightsizing"), app)), [key, remote]);
  const orphans = useLoad(() => (remote ? skip() : costApi(appPath(app, "orphaned-pods"), app)), [key, remote]);
  const quality = useLoad(() => (remote ? skip() : costApi("/data-quality", app)), [key, remote]);
  const gpus = useLoad(() => (remote ? skip() : costApi(appPath(app, "gpus", { days: DAYS }), app)), [key, remote]);
  const carbon = useLoad(() => (remote ? skip() : costApi(appPath(app, "carbon", { days: DAYS }), app)), [key, remote]);

  if (remote) {
    return (
      <div style={styles.tab} data-testid="finops-app-tab">
        <p style={styles.notice} data-testid="remote-notice">
          {app.namespace}/{app.name} deploys to another cluster ({destination.server || destination.name}). finops
          measures only the cluster it runs in, so it has no cost for this application here; see the finops of that
          cluster.
        </p>
      </div>
    );
  }
  if (actual.status === "loading" || daily.status === "loading") {
    return (
      <div style={styles.tab} data-testid="finops-app-tab">
        <Loading what="the application's cost" />
      </div>
    );
  }
  // An application not measured yet is a state the API says with 200 (`recorded` false), never
  // an error status: the browser would log one as a console error for every such application.
  const recorded = actual.status === "ok" && actual.data.recorded;
  // The record's own currency (its rows'), else the daily history's; null: unknown, shown as such.
  const currency = (recorded && actual.data.currency) || (daily.status === "ok" && daily.data.currency) || null;
  const noRecord = `No cost record for ${app.namespace}/${app.name} yet.`;
  const unrecorded = (state) => state.status === "ok" && !state.data.recorded;
  return (
    <div style={styles.tab} data-testid="finops-app-tab" data-currency={currency || ""}>
      <h3 style={{ marginTop: 0 }}>
        Cost of {app.namespace}/{app.name}
      </h3>
      {quality.status === "ok" ? <DataQuality dq={quality.data} /> : null}
      {quality.status === "loading" ? <Loading what="how complete the data is" /> : null}
      {quality.status === "error" ? <Problem error={quality.error} what="how complete the data is" testid="data-quality" /> : null}
      {recorded ? <Actual actual={actual.data} currency={currency} /> : null}
      {unrecorded(actual) ? (
        <p className="finops-empty" data-testid="actual-empty">
          No cost record for {app.namespace}/{app.name} yet: it is measured after its next successful sync (or by the
          install backfill).
        </p>
      ) : null}
      {actual.status === "error" ? <Problem error={actual.error} what="this application's cost" testid="actual" /> : null}
      <AppGpusCarbon gpus={gpus} carbon={carbon} name={`${app.namespace}/${app.name}`} />
      <Card title="Anomaly score (today)" state={actual} what="the anomaly score" testid="anomaly">
        {(data) => (data.recorded ? <Anomaly anomaly={data.anomaly} currency={currency} /> : <Note testid="anomaly-empty">{noRecord}</Note>)}
      </Card>
      <section style={styles.section}>
        <h4>Change since the previous sync</h4>
        {trend.status === "loading" ? <Loading what="the trend" /> : null}
        {trend.status === "ok" && trend.data.recorded ? <Trend trend={trend.data} currency={trend.data.currency || currency} /> : null}
        {unrecorded(trend) ? <Note testid="trend-empty">No record yet, so no trend.</Note> : null}
        {trend.status === "error" ? (
          <Problem error={trend.error} what="the trend" testid="trend" />
        ) : null}
      </section>
      <section style={styles.section}>
        <h4>Last 30 days</h4>
        {unrecorded(daily) ? <Note testid="daily-empty">No daily history yet.</Note> : null}
        {daily.status === "ok" && daily.data.recorded ? (
          <>
            <Chart days={daily.data.days} currency={daily.data.currency || currency} />
            <p data-testid="daily-total">
              Total {daily.data.from} to {daily.data.to}: {formatMoney(daily.data.total, daily.data.currency || currency)}
              {daily.data.scope === "namespace" ? " (namespace scope)" : ""}
            </p>
          </>
        ) : null}
        {daily.status === "error" ? <Problem error={daily.error} what="the daily history" testid="daily" /> : null}
      </section>
      <Card title="Rightsizing (VerticalPodAutoscalers)" state={rightsizing} what="the rightsizing advice" testid="rightsizing">
        {(data) => <Rightsizing data={data} currency={currency} />}
      </Card>
      <Card title="Orphaned pods" state={orphans} what="the orphaned pods" testid="orphans">
        {(data) => <OrphanedPods data={data} currency={currency} where={data.destinationNamespace || "its namespace"} />}
      </Card>
      <Card title="Cloud estimates (CI)" state={actual} what="the cloud estimates" testid="estimates">
        {(data) => (data.recorded ? <CloudEstimates estimates={data.cloudEstimates} /> : <Note testid="estimates-empty">{noRecord}</Note>)}
      </Card>
    </div>
  );
}

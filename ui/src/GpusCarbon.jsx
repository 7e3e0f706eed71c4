// GPUs and emissions: the application's GPU-hours, GPU cost and kg CO2e beside its cost (the Cost
// tab), and the cluster's GPU lines (each GPU model's idle on its own line) and kg CO2e per team and
// namespace beside cost (the cluster view), over the trailing 30 days of stored hours.
// Hours stored without emissions are said, never shown as 0 kg: the API gives null grams then.
import { formatMoney, isAmount } from "./money.js";
import { Loading, Note, Problem, styles } from "./states.jsx";

export const DAYS = 30;

/** "2.450" kg as "2.450 kg CO2e"; a dash when not measured (null). */
export function formatKg(kg) {
  return isAmount(kg) ? `${kg} kg CO2e` : "—";
}

/** "nodes: opencost (region not stated); disks: ..." from the API's factors. */
export function factorsText(factors) {
  const plural = { node: "nodes", disk: "disks" };
  return (factors || [])
    .map(
      (f) =>
        `${plural[f.kind] || f.kind}: ${f.source} (${f.region ? `region ${f.region}` : "region not stated"})` +
        (isAmount(f.kg) ? `, ${f.kg} kg CO2e over ${f.hours} hours` : ""),
    )
    .join("; ");
}

/** What the grams stand on: how many stored hours have emissions, and which have none. */
function hoursText(withEmissions, stored, without) {
  if (stored === 0) return "No stored hour in these days.";
  if (withEmissions === 0) {
    return `No emissions for the ${stored} stored hours: the source had no carbon estimates for them (OpenCost's CARBON_ESTIMATES_ENABLED), so no kg CO2e is shown, not 0.`;
  }
  if (withEmissions < stored) {
    return `Emissions for ${withEmissions} of ${stored} stored hours; none for ${without}, which are not counted (not 0 kg).`;
  }
  return `Emissions for all ${stored} stored hours.`;
}

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

/** The Cost tab's section: `gpus` and `carbon` are the states of /apps/.../gpus and /carbon. */
export function AppGpusCarbon({ gpus, carbon, name }) {
  return (
    <section style={styles.section} data-testid="footprint-card">
      <h4>GPUs and emissions, last {DAYS} days</h4>
      {gpus.status === "loading" || carbon.status === "loading" ? <Loading what="the GPUs and emissions" /> : null}
      {gpus.status === "error" ? <Problem error={gpus.error} what="the GPU figures" testid="app-gpus" /> : null}
      {carbon.status === "error" ? <Problem error={carbon.error} what="the emissions" testid="app-carbon" /> : null}
      {carbon.status === "ok" && !carbon.data.recorded ? (
        <Note testid="footprint-empty">No cost record for {name} yet.</Note>
      ) : null}
      {carbon.status === "ok" && carbon.data.recorded && gpus.status !== "loading" ? (
        <Footprint gpus={gpus.status === "ok" && gpus.data.recorded ? gpus.data : null} carbon={carbon.data} />
      ) : null}
    </section>
  );
}

function Footprint({ gpus, carbon }) {
  const currency = carbon.currency;
  const gpu = gpus && gpus.gpu;
  return (
    <div data-testid="footprint" data-measured={String(carbon.grams !== null)}>
      <div style={styles.figures}>
        <Figure
          label={`Cost, ${carbon.days} days`}
          value={formatMoney(carbon.cost, currency)}
          testid="footprint-cost"
          note={`${carbon.hours} stored hours`}
        />
        <Figure
          label="Emissions"
          value={formatKg(carbon.kg)}
          testid="footprint-kg"
          note={carbon.grams === null ? "not measured" : `${carbon.grams} g, ${carbon.hoursWithEmissions} hours`}
        />
        {gpu ? (
          <>
            <Figure
              label="GPU-hours"
              value={gpu.gpuHours}
              testid="footprint-gpu-hours"
              note={gpu.busyGpuHours === null ? "use not measured" : `${gpu.busyGpuHours} busy`}
            />
            <Figure
              label="GPU cost"
              value={formatMoney(gpu.cost, gpus.currency || currency)}
              testid="footprint-gpu-cost"
              note={
                gpu.costPerBusyGpuHour === null
                  ? null
                  : `${formatMoney(gpu.costPerBusyGpuHour, gpus.currency || currency)} a busy GPU-hour`
              }
            />
          </>
        ) : null}
      </div>
      {carbon.factors.length ? (
        <p style={styles.muted} data-testid="footprint-factors">
          Factors: {factorsText(carbon.factors)}.
        </p>
      ) : null}
      <p style={carbon.hoursWithEmissions < carbon.hours ? styles.warning : styles.muted} data-testid="footprint-hours">
        {hoursText(carbon.hoursWithEmissions, carbon.hours, carbon.hoursWithout)}
      </p>
    </div>
  );
}

function gpuLabel(line, by) {
  return line.kind === "idle" ? (line.model ? `Idle ${line.model}` : "Idle (GPUs not split)") : line[by];
}

/** The cluster view's GPU section: /gpus. */
export function ClusterGpus({ data }) {
  const by = data.by;
  const lines = data.lines || [];
  if (lines.length === 0) return <p data-testid="gpus-empty">No GPU cost in the last {data.days} days.</p>;
  const bases = (data.bases || [])
    .map((b) => `${b.hours} hours ${b.gpu_basis ? `split by GPU_BASIS ${b.gpu_basis} (MIG by ${b.gpu_mig_by})` : "not split"}`)
    .join("; ");
  return (
    <>
      <table style={styles.table} data-testid="gpus">
        <thead>
          <tr>
            <th style={styles.cell}>{by === "team" ? "Team" : by === "namespace" ? "Namespace" : "Workload"}</th>
            <th style={styles.number}>GPU-hours</th>
            <th style={styles.number}>GPU cost</th>
            <th style={styles.number}>Busy GPU-hours</th>
            <th style={styles.number}>Per busy GPU-hour</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((line) => (
            <tr key={line[by]} data-testid="gpu-line" data-line={line[by]} data-kind={line.kind}>
              <td style={styles.cell}>{gpuLabel(line, by)}</td>
              <td style={styles.number} data-testid="gpu-hours">
                {line.gpu_hours}
              </td>
              <td style={styles.number} data-testid="gpu-cost">
                {formatMoney(line.cost, line.currency)}
              </td>
              <td style={styles.number}>{line.busy_gpu_hours === null ? "—" : line.busy_gpu_hours}</td>
              <td style={styles.number} data-testid="gpu-per-busy">
                {line.cost_per_busy_gpu_hour === null ? "—" : formatMoney(line.cost_per_busy_gpu_hour, line.currency)}
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          {(data.totals || []).map((t) => (
            <tr key={`${t.cluster}/${t.currency}`} data-testid="gpu-total">
              <th style={styles.cell}>Total</th>
              <td style={styles.number} data-testid="gpu-total-hours">
                {t.gpu_hours}
              </td>
              <td style={styles.number} data-testid="gpu-total-cost">
                {formatMoney(t.cost, t.currency)}
              </td>
              <td colSpan={2} />
            </tr>
          ))}
        </tfoot>
      </table>
      <p style={styles.muted} data-testid="gpu-bases">
        Each line's GPU cost is its share of its GPUs; what nobody used is idle, per GPU model. {bases ? `Hours: ${bases}.` : ""}
      </p>
    </>
  );
}

function CarbonTable({ data, title }) {
  const by = data.by;
  return (
    <table style={styles.table} data-testid={`carbon-${by}`}>
      <thead>
        <tr>
          <th style={styles.cell}>{title}</th>
          <th style={styles.number}>Cost</th>
          <th style={styles.number}>kg CO2e</th>
        </tr>
      </thead>
      <tbody>
        {data.lines.map((line) => (
          <tr key={line[by]} data-testid="carbon-line" data-line={line[by]} data-kind={line.kind}>
            <td style={styles.cell}>{line.kind === "idle" ? "Idle" : line.kind === "unallocated" ? "No owner" : line[by]}</td>
            <td style={styles.number} data-testid="carbon-cost">
              {formatMoney(line.cost, line.currency || data.currency)}
            </td>
            <td style={styles.number} data-testid="carbon-kg">
              {isAmount(line.kg) ? line.kg : "—"}
            </td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th style={styles.cell}>Total</th>
          <td style={styles.number} data-testid="carbon-total-cost">
            {formatMoney(data.total.cost, data.currency)}
          </td>
          <td style={styles.number} data-testid="carbon-total-kg">
            {isAmount(data.total.kg) ? data.total.kg : "—"}
          </td>
        </tr>
      </tfoot>
    </table>
  );
}

/** The cluster view's emissions section: /carbon by team and by namespace (states). */
export function ClusterCarbon({ team, namespace }) {
  const states = [
    [team, "Team"],
    [namespace, "Namespace"],
  ];
  const loaded = team.status === "ok" ? team.data : namespace.status === "ok" ? namespace.data : null;
  return (
    <div data-testid="carbon">
      {states.map(([state, title]) => (
        <React.Fragment key={title}>
          {state.status === "loading" ? <Loading what={`the emissions per ${title.toLowerCase()}`} /> : null}
          {state.status === "error" ? (
            <Problem error={state.error} what={`the emissions per ${title.toLowerCase()}`} testid={`carbon-${title.toLowerCase()}`} />
          ) : null}
          {state.status === "ok" && state.data.lines.length ? <CarbonTable data={state.data} title={title} /> : null}
        </React.Fragment>
      ))}
      {loaded && loaded.lines.length === 0 ? <p data-testid="carbon-empty">No cost in the last {loaded.days} days.</p> : null}
      {loaded && loaded.factors.length ? (
        <p style={styles.muted} data-testid="carbon-factors">
          Factors: {factorsText(loaded.factors)}.
        </p>
      ) : null}
      {loaded ? (
        <p style={loaded.hoursWithEmissions < loaded.hoursStored ? styles.warning : styles.muted} data-testid="carbon-hours">
          {hoursText(loaded.hoursWithEmissions, loaded.hoursStored, loaded.hoursWithout)}
        </p>
      ) : null}
    </div>
  );
}

// The parts of the tab that come with /actual: the anomaly score (today's cost against the
// application's own daily history) and the cloud estimates CI pushed (Infracost), with their age.
import { formatAge, formatMoney } from "./money.js";
import { Note, styles } from "./states.jsx";

const STALE_DAYS = 7; // cost_api marks an estimate `stale` when CI has not pushed it for 7 days

export function Anomaly({ anomaly, currency }) {
  if (!anomaly) {
    return <Note testid="anomaly-none">No anomaly score: the application has no cost record yet.</Note>;
  }
  const money = (value) => formatMoney(value, anomaly.currency || currency);
  const base = anomaly.baseline || {};
  const today = anomaly.today || {};
  const baseline =
    base.days > 0 ? (
      <p style={styles.muted} data-testid="anomaly-baseline">
        Baseline: <span data-testid="anomaly-days">{base.days}</span> recorded days,{" "}
        <span data-testid="anomaly-from">{base.from}</span> to <span data-testid="anomaly-to">{base.to}</span>
        {base.median ? (
          <>
            ; median <span data-testid="anomaly-median">{money(base.median)}</span> a day, MAD{" "}
            <span data-testid="anomaly-mad">{money(base.mad)}</span> (spread {money(base.spread)}).
          </>
        ) : (
          " (too few for a median)."
        )}
      </p>
    ) : null;
  if (anomaly.score === null || anomaly.score === undefined) {
    return (
      <div data-testid="anomaly" data-scored="false">
        <p data-testid="anomaly-reason">No anomaly score yet: {anomaly.reason || "not enough data"}.</p>
        {baseline}
      </div>
    );
  }
  return (
    <div data-testid="anomaly" data-scored="true" data-anomalous={String(anomaly.anomalous === true)}>
      <p>
        {anomaly.anomalous ? (
          <span style={styles.alertBadge} data-testid="anomaly-badge">
            anomalous
          </span>
        ) : (
          <span style={styles.calmBadge} data-testid="anomaly-badge">
            usual
          </span>
        )}
        Score <strong data-testid="anomaly-score">{anomaly.score}</strong> (anomalous from {anomaly.threshold}): today
        runs at <span data-testid="anomaly-run-rate">{money(anomaly.runRatePerDay)}</span> a day over its{" "}
        {today.hours} final hours ({money(today.cost)} so far).
      </p>
      {baseline}
    </div>
  );
}

export function CloudEstimates({ estimates }) {
  const rows = Array.isArray(estimates) ? estimates : [];
  if (rows.length === 0) {
    return (
      <Note testid="estimates-empty">
        No cloud estimate: CI has not pushed one for this application (Infracost's JSON, docs/how-to/ci-cloud-estimates.md).
      </Note>
    );
  }
  return (
    <table style={styles.table} data-testid="estimates">
      <thead>
        <tr>
          <th style={styles.cell}>Source</th>
          <th style={styles.number}>Monthly</th>
          <th style={styles.number}>Resources</th>
          <th style={styles.number}>Unpriced</th>
          <th style={styles.number}>Age</th>
          <th style={styles.cell} />
        </tr>
      </thead>
      <tbody>
        {rows.map((e) => (
          <tr key={e.source} data-testid="estimate-row" data-source={e.source} data-stale={String(e.stale === true)}>
            <td style={styles.cell}>{e.source}</td>
            <td style={styles.number} data-testid="estimate-monthly">
              {formatMoney(e.monthly, e.currency)}
            </td>
            <td style={styles.number} data-testid="estimate-resources">
              {e.resources}
            </td>
            <td style={styles.number} data-testid="estimate-unpriced" title="usage-based resources without usage figures">
              {e.unpriced}
            </td>
            <td style={styles.number} data-testid="estimate-age" title={`received ${e.receivedAt}`}>
              {formatAge(e.ageSeconds)}
            </td>
            <td style={styles.cell}>
              {e.stale ? (
                <span style={styles.warning} data-testid="estimate-stale">
                  stale: CI has not pushed it for more than {STALE_DAYS} days
                </span>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What in /data-quality explains a missing or partial figure; [] when all is well. */
export function dataQualityIssues(dq) {
  const issues = [];
  const ledger = (dq && dq.ledger) || {};
  if (!ledger.newestFinalHour) {
    issues.push(["behind", "No hour is final yet: the figures fill in as collect_allocations runs."]);
  } else if (typeof ledger.hoursBehind === "number" && ledger.hoursBehind > 2) {
    issues.push(["behind", `Cost data is ${ledger.hoursBehind} hours behind (newest final hour ${ledger.newestFinalHour}).`]);
  }
  if (ledger.lost > 0) {
    const recent = (ledger.recentLost || [])[0];
    const why = recent ? ` Latest: ${recent.hour}, ${recent.reason}.` : "";
    issues.push(["lost", `${ledger.lost} hours are lost: their cost is in no figure.${why}`]);
  }
  if (ledger.open > 2) {
    issues.push(["open", `${ledger.open} hours are still open (collected, not final): recent figures may still change.`]);
  }
  const byHours = (dq && dq.unpriced && dq.unpriced.byHours) || {};
  if (byHours.unpriced > 0) {
    issues.push([
      "unpriced",
      `${byHours.unpriced} of this month's ${byHours.withRows} hours with cost were collected without a PriceBook (unpriced): their cost counts as 0.`,
    ]);
  }
  const pricing = (dq && dq.pricing) || {};
  if (pricing.reason) issues.push(["pricing", `Pricing: ${pricing.reason}.`]);
  const opencost = (dq && dq.opencost) || {};
  if (opencost.reachable === false) {
    issues.push(["opencost", `OpenCost is not reachable (${opencost.reason}): new hours are not being collected.`]);
  }
  return issues;
}

/** A compact notice when the data explains a missing or partial figure; nothing when all is well. */
export function DataQuality({ dq }) {
  const issues = dataQualityIssues(dq);
  if (issues.length === 0) return <span data-testid="data-quality-ok" hidden />;
  const book = dq.pricing && dq.pricing.pricebook;
  return (
    <div style={{ ...styles.notice, ...styles.section }} role="status" data-testid="data-quality">
      <strong>About these figures</strong>
      <ul style={{ margin: "4px 0" }}>
        {issues.map(([kind, text]) => (
          <li key={kind} data-testid="dq-item" data-kind={kind}>
            {text}
          </li>
        ))}
      </ul>
      <span style={styles.muted} data-testid="dq-pricing">
        {!book
          ? "No PriceBook has priced the data."
          : book.source === "opencost"
            ? `Priced with OpenCost's own prices, declared by ${book.name} (${book.currency}).`
            : `Priced with PriceBook ${book.namespace}/${book.name} (${book.currency}).`}
      </span>
    </div>
  );
}

// finops Argo CD UI extension (built from ui/src by ui/build.mjs; do not edit). Uses Argo CD's global React.
(() => {
  // src/api.js
  var PROXY = "/extensions/finops/api/v1";
  var ApiError = class extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  };
  async function errorOf(response) {
    const text = await response.text();
    try {
      const body = JSON.parse(text);
      if (body && typeof body.error === "string") return new ApiError(response.status, body.error);
      if (body && typeof body.message === "string") return new ApiError(response.status, body.message);
    } catch (_) {
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
  function costApi(path, app) {
    return getJSON(PROXY + path, {
      "Argocd-Application-Name": `${app.namespace}:${app.name}`,
      "Argocd-Project-Name": app.project
    });
  }
  async function argoApplication(namespace, name) {
    const query = new URLSearchParams({ name, appNamespace: namespace });
    const body = await getJSON(`/api/v1/applications?${query}`, {});
    const items = body && body.items || [];
    return items.find((a) => a.metadata && a.metadata.namespace === namespace && a.metadata.name === name) || null;
  }
  function appPath(app, route, query) {
    const base = `/apps/${encodeURIComponent(app.namespace)}/${encodeURIComponent(app.name)}/${route}`;
    return query ? `${base}?${new URLSearchParams(query)}` : base;
  }

  // src/money.js
  var DECIMAL = /^-?\d+(\.\d+)?$/;
  function isAmount(value) {
    return typeof value === "string" && DECIMAL.test(value);
  }
  function grouped(amount) {
    const negative = amount.startsWith("-");
    const [whole, fraction] = (negative ? amount.slice(1) : amount).split(".");
    const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return `${negative ? "-" : ""}${withCommas}${fraction === void 0 ? "" : `.${fraction}`}`;
  }
  function formatMoney(value, currency) {
    const amount = value && typeof value === "object" ? value.amount : value;
    if (!isAmount(amount)) return "—";
    return `${grouped(amount)} ${currency || "(currency unknown)"}`;
  }
  function formatChange(value, currency) {
    const amount = value && typeof value === "object" ? value.amount : value;
    if (!isAmount(amount)) return "—";
    return (amount.startsWith("-") ? "" : "+") + formatMoney(amount, currency);
  }
  function formatRatio(value) {
    if (!isAmount(value)) return "—";
    const percent = Number(value) * 100;
    return Number.isFinite(percent) ? `${percent.toFixed(1)} %` : "—";
  }
  function microsOf(value) {
    const micros = value && typeof value === "object" ? value.micros : value;
    return typeof micros === "number" && Number.isFinite(micros) ? micros : 0;
  }
  function formatAge(seconds) {
    if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 0) return "—";
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
    if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)} h`;
    return `${Math.floor(seconds / 86400)} days`;
  }

  // src/states.jsx
  function useLoad(load, deps) {
    const [state, setState] = React.useState({ status: "loading" });
    React.useEffect(() => {
      let live = true;
      setState({ status: "loading" });
      load().then(
        (data) => live && setState({ status: "ok", data }),
        (error) => live && setState({ status: "error", error })
      );
      return () => {
        live = false;
      };
    }, deps);
    return state;
  }
  function Loading({ what }) {
    return /* @__PURE__ */ React.createElement("p", { className: "finops-loading", "data-testid": "loading" }, "Loading ", what, "…");
  }
  function Problem({ error, what, empty, testid }) {
    const status = error && typeof error.status === "number" ? error.status : 0;
    const detail = error && error.message ? error.message : String(error);
    if (status === 404 && empty) {
      return /* @__PURE__ */ React.createElement("p", { className: "finops-empty", "data-testid": `${testid}-empty` }, empty);
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
    return /* @__PURE__ */ React.createElement("p", { className: "finops-error", role: "alert", "data-testid": `${testid}-error`, "data-status": status, style: styles.error }, text);
  }
  var styles = {
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
      color: "#363c4a"
    },
    notice: { padding: "10px 12px", borderLeft: "4px solid #f4c030", background: "#fdf6e3" },
    error: { padding: "10px 12px", borderLeft: "4px solid #e96d76", background: "#fcebec" },
    table: { borderCollapse: "collapse", margin: "6px 0" },
    cell: { padding: "3px 12px 3px 0", textAlign: "left", borderBottom: "1px solid #eef1f3" },
    number: { padding: "3px 12px 3px 0", textAlign: "right", borderBottom: "1px solid #eef1f3", whiteSpace: "nowrap" },
    muted: { color: "#6d7f8b" },
    warning: { color: "#a35d00" },
    alertBadge: { display: "inline-block", padding: "1px 8px", marginRight: "8px", borderRadius: "10px", fontSize: "12px", background: "#fcebec", color: "#a3212c" },
    calmBadge: { display: "inline-block", padding: "1px 8px", marginRight: "8px", borderRadius: "10px", fontSize: "12px", background: "#e3f4ea", color: "#1e6b3a" }
  };
  function Card({ title, state, what, testid, empty, children }) {
    return /* @__PURE__ */ React.createElement("section", { style: styles.section, "data-testid": `${testid}-card` }, /* @__PURE__ */ React.createElement("h4", null, title), state.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what }) : null, state.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: state.error, what, testid, empty }) : null, state.status === "ok" ? children(state.data) : null);
  }
  function Note({ testid, children }) {
    return /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": testid }, children);
  }

  // src/Chart.jsx
  var WIDTH = 640;
  var HEIGHT = 150;
  var TOP = 8;
  function Chart({ days, currency }) {
    if (!Array.isArray(days) || days.length === 0) {
      return /* @__PURE__ */ React.createElement("p", { className: "finops-empty", "data-testid": "daily-empty" }, "No daily history yet.");
    }
    const most = Math.max(1, ...days.map((d) => Math.max(0, microsOf(d.cost))));
    const peak = days.reduce((a, d) => microsOf(d.cost) > microsOf(a.cost) ? d : a, days[0]);
    const slot = WIDTH / days.length;
    const bar = Math.max(1, slot * 0.7);
    return /* @__PURE__ */ React.createElement("figure", { style: { margin: 0 }, "data-testid": "daily-chart", "data-days": days.length }, /* @__PURE__ */ React.createElement(
      "svg",
      {
        viewBox: `0 0 ${WIDTH} ${HEIGHT + TOP}`,
        width: "100%",
        style: { maxWidth: `${WIDTH}px`, display: "block" },
        role: "img",
        "aria-label": `Cost per day, ${days[0].day} to ${days[days.length - 1].day}`
      },
      /* @__PURE__ */ React.createElement("line", { x1: "0", y1: HEIGHT + TOP, x2: WIDTH, y2: HEIGHT + TOP, stroke: "#ccd6dd" }),
      days.map((d, i) => {
        const h = Math.max(0, microsOf(d.cost)) / most * HEIGHT;
        const partial = d.final === false;
        const note = !partial ? "" : i === days.length - 1 ? ` (today so far, ${d.hours} h)` : " (not recorded yet)";
        return /* @__PURE__ */ React.createElement(
          "rect",
          {
            key: d.day,
            "data-testid": "daily-point",
            "data-day": d.day,
            "data-amount": d.cost && d.cost.amount,
            "data-final": String(d.final !== false),
            x: i * slot + (slot - bar) / 2,
            y: TOP + HEIGHT - h,
            width: bar,
            height: Math.max(h, 0.5),
            fill: partial ? "none" : "#0dadea",
            stroke: "#0dadea"
          },
          /* @__PURE__ */ React.createElement("title", null, `${d.day}: ${formatMoney(d.cost, currency)}${note}`)
        );
      })
    ), /* @__PURE__ */ React.createElement("figcaption", { style: styles.muted }, days[0].day, " to ", days[days.length - 1].day, ": one bar per day; highest ", formatMoney(peak.cost, currency), " on", " ", peak.day, days[days.length - 1].final === false ? "; hollow bars are not final (today, still counting, or a day not recorded yet)" : "", "."));
  }

  // src/GpusCarbon.jsx
  var DAYS = 30;
  function formatKg(kg) {
    return isAmount(kg) ? `${kg} kg CO2e` : "—";
  }
  function factorsText(factors) {
    const plural = { node: "nodes", disk: "disks" };
    return (factors || []).map(
      (f) => `${plural[f.kind] || f.kind}: ${f.source} (${f.region ? `region ${f.region}` : "region not stated"})` + (isAmount(f.kg) ? `, ${f.kg} kg CO2e over ${f.hours} hours` : "")
    ).join("; ");
  }
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
    return /* @__PURE__ */ React.createElement("div", { style: styles.figure }, /* @__PURE__ */ React.createElement("div", { style: styles.figureLabel }, label), /* @__PURE__ */ React.createElement("div", { style: styles.figureValue, "data-testid": testid }, value), note ? /* @__PURE__ */ React.createElement("div", { style: styles.muted }, note) : null);
  }
  function AppGpusCarbon({ gpus, carbon, name }) {
    return /* @__PURE__ */ React.createElement("section", { style: styles.section, "data-testid": "footprint-card" }, /* @__PURE__ */ React.createElement("h4", null, "GPUs and emissions, last ", DAYS, " days"), gpus.status === "loading" || carbon.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what: "the GPUs and emissions" }) : null, gpus.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: gpus.error, what: "the GPU figures", testid: "app-gpus" }) : null, carbon.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: carbon.error, what: "the emissions", testid: "app-carbon" }) : null, carbon.status === "ok" && !carbon.data.recorded ? /* @__PURE__ */ React.createElement(Note, { testid: "footprint-empty" }, "No cost record for ", name, " yet.") : null, carbon.status === "ok" && carbon.data.recorded && gpus.status !== "loading" ? /* @__PURE__ */ React.createElement(Footprint, { gpus: gpus.status === "ok" && gpus.data.recorded ? gpus.data : null, carbon: carbon.data }) : null);
  }
  function Footprint({ gpus, carbon }) {
    const currency = carbon.currency;
    const gpu = gpus && gpus.gpu;
    return /* @__PURE__ */ React.createElement("div", { "data-testid": "footprint", "data-measured": String(carbon.grams !== null) }, /* @__PURE__ */ React.createElement("div", { style: styles.figures }, /* @__PURE__ */ React.createElement(
      Figure,
      {
        label: `Cost, ${carbon.days} days`,
        value: formatMoney(carbon.cost, currency),
        testid: "footprint-cost",
        note: `${carbon.hours} stored hours`
      }
    ), /* @__PURE__ */ React.createElement(
      Figure,
      {
        label: "Emissions",
        value: formatKg(carbon.kg),
        testid: "footprint-kg",
        note: carbon.grams === null ? "not measured" : `${carbon.grams} g, ${carbon.hoursWithEmissions} hours`
      }
    ), gpu ? /* @__PURE__ */ React.createElement(React.Fragment, null, /* @__PURE__ */ React.createElement(
      Figure,
      {
        label: "GPU-hours",
        value: gpu.gpuHours,
        testid: "footprint-gpu-hours",
        note: gpu.busyGpuHours === null ? "use not measured" : `${gpu.busyGpuHours} busy`
      }
    ), /* @__PURE__ */ React.createElement(
      Figure,
      {
        label: "GPU cost",
        value: formatMoney(gpu.cost, gpus.currency || currency),
        testid: "footprint-gpu-cost",
        note: gpu.costPerBusyGpuHour === null ? null : `${formatMoney(gpu.costPerBusyGpuHour, gpus.currency || currency)} a busy GPU-hour`
      }
    )) : null), carbon.factors.length ? /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "footprint-factors" }, "Factors: ", factorsText(carbon.factors), ".") : null, /* @__PURE__ */ React.createElement("p", { style: carbon.hoursWithEmissions < carbon.hours ? styles.warning : styles.muted, "data-testid": "footprint-hours" }, hoursText(carbon.hoursWithEmissions, carbon.hours, carbon.hoursWithout)));
  }
  function gpuLabel(line, by) {
    return line.kind === "idle" ? line.model ? `Idle ${line.model}` : "Idle (GPUs not split)" : line[by];
  }
  function ClusterGpus({ data }) {
    const by = data.by;
    const lines = data.lines || [];
    if (lines.length === 0) return /* @__PURE__ */ React.createElement("p", { "data-testid": "gpus-empty" }, "No GPU cost in the last ", data.days, " days.");
    const bases = (data.bases || []).map((b) => `${b.hours} hours ${b.gpu_basis ? `split by GPU_BASIS ${b.gpu_basis} (MIG by ${b.gpu_mig_by})` : "not split"}`).join("; ");
    return /* @__PURE__ */ React.createElement(React.Fragment, null, /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": "gpus" }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, by === "team" ? "Team" : by === "namespace" ? "Namespace" : "Workload"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "GPU-hours"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "GPU cost"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Busy GPU-hours"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Per busy GPU-hour"))), /* @__PURE__ */ React.createElement("tbody", null, lines.map((line) => /* @__PURE__ */ React.createElement("tr", { key: line[by], "data-testid": "gpu-line", "data-line": line[by], "data-kind": line.kind }, /* @__PURE__ */ React.createElement("td", { style: styles.cell }, gpuLabel(line, by)), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "gpu-hours" }, line.gpu_hours), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "gpu-cost" }, formatMoney(line.cost, line.currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number }, line.busy_gpu_hours === null ? "—" : line.busy_gpu_hours), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "gpu-per-busy" }, line.cost_per_busy_gpu_hour === null ? "—" : formatMoney(line.cost_per_busy_gpu_hour, line.currency))))), /* @__PURE__ */ React.createElement("tfoot", null, (data.totals || []).map((t) => /* @__PURE__ */ React.createElement("tr", { key: `${t.cluster}/${t.currency}`, "data-testid": "gpu-total" }, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Total"), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "gpu-total-hours" }, t.gpu_hours), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "gpu-total-cost" }, formatMoney(t.cost, t.currency)), /* @__PURE__ */ React.createElement("td", { colSpan: 2 }))))), /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "gpu-bases" }, "Each line's GPU cost is its share of its GPUs; what nobody used is idle, per GPU model. ", bases ? `Hours: ${bases}.` : ""));
  }
  function CarbonTable({ data, title }) {
    const by = data.by;
    return /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": `carbon-${by}` }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, title), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Cost"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "kg CO2e"))), /* @__PURE__ */ React.createElement("tbody", null, data.lines.map((line) => /* @__PURE__ */ React.createElement("tr", { key: line[by], "data-testid": "carbon-line", "data-line": line[by], "data-kind": line.kind }, /* @__PURE__ */ React.createElement("td", { style: styles.cell }, line.kind === "idle" ? "Idle" : line.kind === "unallocated" ? "No owner" : line[by]), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "carbon-cost" }, formatMoney(line.cost, line.currency || data.currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "carbon-kg" }, isAmount(line.kg) ? line.kg : "—")))), /* @__PURE__ */ React.createElement("tfoot", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Total"), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "carbon-total-cost" }, formatMoney(data.total.cost, data.currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "carbon-total-kg" }, isAmount(data.total.kg) ? data.total.kg : "—"))));
  }
  function ClusterCarbon({ team, namespace }) {
    const states = [
      [team, "Team"],
      [namespace, "Namespace"]
    ];
    const loaded = team.status === "ok" ? team.data : namespace.status === "ok" ? namespace.data : null;
    return /* @__PURE__ */ React.createElement("div", { "data-testid": "carbon" }, states.map(([state, title]) => /* @__PURE__ */ React.createElement(React.Fragment, { key: title }, state.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what: `the emissions per ${title.toLowerCase()}` }) : null, state.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: state.error, what: `the emissions per ${title.toLowerCase()}`, testid: `carbon-${title.toLowerCase()}` }) : null, state.status === "ok" && state.data.lines.length ? /* @__PURE__ */ React.createElement(CarbonTable, { data: state.data, title }) : null)), loaded && loaded.lines.length === 0 ? /* @__PURE__ */ React.createElement("p", { "data-testid": "carbon-empty" }, "No cost in the last ", loaded.days, " days.") : null, loaded && loaded.factors.length ? /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "carbon-factors" }, "Factors: ", factorsText(loaded.factors), ".") : null, loaded ? /* @__PURE__ */ React.createElement("p", { style: loaded.hoursWithEmissions < loaded.hoursStored ? styles.warning : styles.muted, "data-testid": "carbon-hours" }, hoursText(loaded.hoursWithEmissions, loaded.hoursStored, loaded.hoursWithout)) : null);
  }

  // src/Insights.jsx
  var STALE_DAYS = 7;
  function Anomaly({ anomaly, currency }) {
    if (!anomaly) {
      return /* @__PURE__ */ React.createElement(Note, { testid: "anomaly-none" }, "No anomaly score: the application has no cost record yet.");
    }
    const money = (value) => formatMoney(value, anomaly.currency || currency);
    const base = anomaly.baseline || {};
    const today = anomaly.today || {};
    const baseline = base.days > 0 ? /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "anomaly-baseline" }, "Baseline: ", /* @__PURE__ */ React.createElement("span", { "data-testid": "anomaly-days" }, base.days), " recorded days,", " ", /* @__PURE__ */ React.createElement("span", { "data-testid": "anomaly-from" }, base.from), " to ", /* @__PURE__ */ React.createElement("span", { "data-testid": "anomaly-to" }, base.to), base.median ? /* @__PURE__ */ React.createElement(React.Fragment, null, "; median ", /* @__PURE__ */ React.createElement("span", { "data-testid": "anomaly-median" }, money(base.median)), " a day, MAD", " ", /* @__PURE__ */ React.createElement("span", { "data-testid": "anomaly-mad" }, money(base.mad)), " (spread ", money(base.spread), ").") : " (too few for a median).") : null;
    if (anomaly.score === null || anomaly.score === void 0) {
      return /* @__PURE__ */ React.createElement("div", { "data-testid": "anomaly", "data-scored": "false" }, /* @__PURE__ */ React.createElement("p", { "data-testid": "anomaly-reason" }, "No anomaly score yet: ", anomaly.reason || "not enough data", "."), baseline);
    }
    return /* @__PURE__ */ React.createElement("div", { "data-testid": "anomaly", "data-scored": "true", "data-anomalous": String(anomaly.anomalous === true) }, /* @__PURE__ */ React.createElement("p", null, anomaly.anomalous ? /* @__PURE__ */ React.createElement("span", { style: styles.alertBadge, "data-testid": "anomaly-badge" }, "anomalous") : /* @__PURE__ */ React.createElement("span", { style: styles.calmBadge, "data-testid": "anomaly-badge" }, "usual"), "Score ", /* @__PURE__ */ React.createElement("strong", { "data-testid": "anomaly-score" }, anomaly.score), " (anomalous from ", anomaly.threshold, "): today runs at ", /* @__PURE__ */ React.createElement("span", { "data-testid": "anomaly-run-rate" }, money(anomaly.runRatePerDay)), " a day over its", " ", today.hours, " final hours (", money(today.cost), " so far)."), baseline);
  }
  function CloudEstimates({ estimates }) {
    const rows = Array.isArray(estimates) ? estimates : [];
    if (rows.length === 0) {
      return /* @__PURE__ */ React.createElement(Note, { testid: "estimates-empty" }, "No cloud estimate: CI has not pushed one for this application (Infracost's JSON, docs/how-to/ci-cloud-estimates.md).");
    }
    return /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": "estimates" }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Source"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Monthly"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Resources"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Unpriced"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Age"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }))), /* @__PURE__ */ React.createElement("tbody", null, rows.map((e) => /* @__PURE__ */ React.createElement("tr", { key: e.source, "data-testid": "estimate-row", "data-source": e.source, "data-stale": String(e.stale === true) }, /* @__PURE__ */ React.createElement("td", { style: styles.cell }, e.source), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "estimate-monthly" }, formatMoney(e.monthly, e.currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "estimate-resources" }, e.resources), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "estimate-unpriced", title: "usage-based resources without usage figures" }, e.unpriced), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "estimate-age", title: `received ${e.receivedAt}` }, formatAge(e.ageSeconds)), /* @__PURE__ */ React.createElement("td", { style: styles.cell }, e.stale ? /* @__PURE__ */ React.createElement("span", { style: styles.warning, "data-testid": "estimate-stale" }, "stale: CI has not pushed it for more than ", STALE_DAYS, " days") : null)))));
  }
  function dataQualityIssues(dq) {
    const issues = [];
    const ledger = dq && dq.ledger || {};
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
    const byHours = dq && dq.unpriced && dq.unpriced.byHours || {};
    if (byHours.unpriced > 0) {
      issues.push([
        "unpriced",
        `${byHours.unpriced} of this month's ${byHours.withRows} hours with cost were collected without a PriceBook (unpriced): their cost counts as 0.`
      ]);
    }
    const pricing = dq && dq.pricing || {};
    if (pricing.reason) issues.push(["pricing", `Pricing: ${pricing.reason}.`]);
    const opencost = dq && dq.opencost || {};
    if (opencost.reachable === false) {
      issues.push(["opencost", `OpenCost is not reachable (${opencost.reason}): new hours are not being collected.`]);
    }
    return issues;
  }
  function DataQuality({ dq }) {
    const issues = dataQualityIssues(dq);
    if (issues.length === 0) return /* @__PURE__ */ React.createElement("span", { "data-testid": "data-quality-ok", hidden: true });
    const book = dq.pricing && dq.pricing.pricebook;
    return /* @__PURE__ */ React.createElement("div", { style: { ...styles.notice, ...styles.section }, role: "status", "data-testid": "data-quality" }, /* @__PURE__ */ React.createElement("strong", null, "About these figures"), /* @__PURE__ */ React.createElement("ul", { style: { margin: "4px 0" } }, issues.map(([kind, text]) => /* @__PURE__ */ React.createElement("li", { key: kind, "data-testid": "dq-item", "data-kind": kind }, text))), /* @__PURE__ */ React.createElement("span", { style: styles.muted, "data-testid": "dq-pricing" }, !book ? "No PriceBook has priced the data." : book.source === "opencost" ? `Priced with OpenCost's own prices, declared by ${book.name} (${book.currency}).` : `Priced with PriceBook ${book.namespace}/${book.name} (${book.currency}).`));
  }

  // src/Workloads.jsx
  var RESOURCES = [
    ["cpu", "CPU"],
    ["memory", "Memory"]
  ];
  function oneCurrency(values, fallback) {
    const found = [...new Set(values.filter(Boolean))];
    return found.length === 1 ? found[0] : fallback;
  }
  function ContainerLines({ vpa, container, currency }) {
    const lines = RESOURCES.filter(([key]) => container[key]);
    return /* @__PURE__ */ React.createElement(React.Fragment, null, lines.map(([key, label], i) => {
      const line = container[key];
      return /* @__PURE__ */ React.createElement(
        "tr",
        {
          key: `${container.container}/${key}`,
          "data-testid": "rs-line",
          "data-vpa": vpa.name,
          "data-container": container.container,
          "data-resource": key
        },
        /* @__PURE__ */ React.createElement("td", { style: styles.cell }, i === 0 ? container.container : "", i === 0 && container.settled === false ? /* @__PURE__ */ React.createElement("span", { style: { ...styles.badge, marginLeft: "6px" }, "data-testid": "rs-low-confidence", title: "upper bound above 3x the target" }, "low confidence") : null),
        /* @__PURE__ */ React.createElement("td", { style: styles.cell }, label),
        /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "rs-current" }, line.currentQuantity || "—"),
        /* @__PURE__ */ React.createElement("td", { style: styles.number }, "→"),
        /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "rs-suggested" }, line.suggestedQuantity || "—"),
        /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "rs-monthly" }, formatChange(line.monthly, currency))
      );
    }));
  }
  function Vpa({ vpa, fallback }) {
    const title = `${vpa.name} → ${vpa.targetRef ? `${vpa.targetRef.kind} ${vpa.targetRef.name}` : "?"}`;
    if (vpa.managed) {
      return /* @__PURE__ */ React.createElement("div", { "data-testid": "rightsizing-vpa", "data-vpa": vpa.name, "data-managed": "true", style: styles.section }, /* @__PURE__ */ React.createElement("strong", null, title), " ", /* @__PURE__ */ React.createElement("span", { style: styles.badge, "data-testid": "vpa-managed" }, "VPA applies this (mode ", vpa.updateMode, ")"));
    }
    const currency = vpa.currency || fallback;
    const containers = vpa.containers || [];
    const warnings = [...vpa.warnings || [], ...containers.flatMap((c) => c.warnings || [])];
    return /* @__PURE__ */ React.createElement("div", { "data-testid": "rightsizing-vpa", "data-vpa": vpa.name, "data-managed": "false", style: styles.section }, /* @__PURE__ */ React.createElement("strong", null, title), " (mode ", vpa.updateMode, "): ", /* @__PURE__ */ React.createElement("span", { "data-testid": "vpa-monthly" }, formatChange(vpa.monthly, currency)), " ", "a month", containers.length > 0 ? /* @__PURE__ */ React.createElement("table", { style: styles.table }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Container"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Resource"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Current request"), /* @__PURE__ */ React.createElement("th", { style: styles.number }), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Suggested"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Monthly change"))), /* @__PURE__ */ React.createElement("tbody", null, containers.map((c) => /* @__PURE__ */ React.createElement(ContainerLines, { key: c.container, vpa, container: c, currency })))) : null, warnings.length > 0 ? /* @__PURE__ */ React.createElement("ul", { style: { margin: "2px 0" } }, warnings.map((w) => /* @__PURE__ */ React.createElement("li", { key: w, style: styles.warning, "data-testid": "rs-warning" }, w))) : null);
  }
  function Rightsizing({ data, currency }) {
    if (data.available === false) {
      return /* @__PURE__ */ React.createElement(Note, { testid: "rightsizing-unavailable" }, "Rightsizing is not available here: ", data.reason, ".");
    }
    const vpas = data.vpas || [];
    if (vpas.length === 0) {
      return /* @__PURE__ */ React.createElement(Note, { testid: "rightsizing-empty" }, "No VerticalPodAutoscaler in ", data.destinationNamespace, " targets this application's workloads.");
    }
    const advice = vpas.filter((v) => !v.managed);
    const total = oneCurrency(
      advice.map((v) => v.currency),
      currency
    );
    const days = data.window && data.window.days;
    return /* @__PURE__ */ React.createElement("div", { "data-testid": "rightsizing", "data-currency": total || "" }, /* @__PURE__ */ React.createElement("p", { "data-testid": "rightsizing-header" }, "Requests as the VPAs suggest would change the bill by", " ", /* @__PURE__ */ React.createElement("strong", { "data-testid": "rightsizing-monthly" }, formatChange(data.monthly, total)), " a month (negative: a saving), priced from the stored rows of the last ", days, " days", total ? `, in ${total}` : "", "."), vpas.map((v) => /* @__PURE__ */ React.createElement(Vpa, { key: v.name, vpa: v, fallback: total })));
  }
  function ownerText(owner) {
    return owner ? `${owner.kind} ${owner.name}` : "bare pod";
  }
  function OrphanedPods({ data, currency, where }) {
    if (data.available === false) {
      return /* @__PURE__ */ React.createElement(Note, { testid: "orphans-unavailable" }, "Orphaned pods cannot be listed here: ", data.reason, ".");
    }
    const pods = data.pods || [];
    const days = data.window && data.window.days;
    if (pods.length === 0) {
      return /* @__PURE__ */ React.createElement(Note, { testid: "orphans-empty" }, "No orphaned pods in ", where, ": every pod there belongs to an Argo CD application.");
    }
    const total = oneCurrency(
      pods.map((p) => p.currency),
      currency
    );
    return /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": "orphans" }, /* @__PURE__ */ React.createElement("caption", { style: { ...styles.muted, textAlign: "left" } }, "Pods no Argo CD application owns, with their cost over the last ", days, " days"), /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Namespace"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Pod"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Owner"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Phase"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Cost"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Hours"))), /* @__PURE__ */ React.createElement("tbody", null, pods.map((p) => /* @__PURE__ */ React.createElement("tr", { key: `${p.namespace}/${p.pod}`, "data-testid": "orphan-row", "data-namespace": p.namespace, "data-pod": p.pod }, /* @__PURE__ */ React.createElement("td", { style: styles.cell }, p.namespace), /* @__PURE__ */ React.createElement("td", { style: styles.cell }, p.pod), /* @__PURE__ */ React.createElement("td", { style: styles.cell, "data-testid": "orphan-owner" }, ownerText(p.owner)), /* @__PURE__ */ React.createElement("td", { style: styles.cell }, p.phase || "—"), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "orphan-cost" }, formatMoney(p.cost, p.currency || total)), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "orphan-hours" }, p.hours)))), /* @__PURE__ */ React.createElement("tfoot", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Total"), /* @__PURE__ */ React.createElement("td", { colSpan: 3 }), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "orphans-total" }, formatMoney(data.total, total)), /* @__PURE__ */ React.createElement("td", null))));
  }

  // src/AppTab.jsx
  var LOCAL_SERVERS = ["", "https://kubernetes.default.svc"];
  var LOCAL_NAMES = ["", "in-cluster"];
  function isLocal(destination) {
    const d = destination || {};
    return LOCAL_SERVERS.includes(d.server || "") && LOCAL_NAMES.includes(d.name || "");
  }
  function identityOf(application) {
    const meta = application && application.metadata || {};
    const spec = application && application.spec || {};
    return { namespace: meta.namespace || "argocd", name: meta.name || "", project: spec.project || "default" };
  }
  function formatHours(value) {
    const hours = Number(value);
    return Number.isFinite(hours) ? hours.toFixed(1) : "—";
  }
  var RESOURCES2 = [
    ["cpu", "CPU"],
    ["ram", "Memory"],
    ["gpu", "GPU"],
    ["pv", "Storage"],
    ["network", "Network"],
    ["lb", "Load balancers"]
  ];
  function Figure2({ label, value, testid, note }) {
    return /* @__PURE__ */ React.createElement("div", { style: styles.figure }, /* @__PURE__ */ React.createElement("div", { style: styles.figureLabel }, label), /* @__PURE__ */ React.createElement("div", { style: styles.figureValue, "data-testid": testid }, value), note ? /* @__PURE__ */ React.createElement("div", { style: styles.muted }, note) : null);
  }
  function ScopeLabel({ actual }) {
    const text = actual.scope === "application" ? `Application scope: this application's own pods in namespace ${actual.destinationNamespace}.` : `Namespace scope: every pod in namespace ${actual.destinationNamespace}, which may include other applications' (this application's own pods could not be told apart).`;
    return /* @__PURE__ */ React.createElement("p", { "data-testid": "scope-label", "data-scope": actual.scope }, /* @__PURE__ */ React.createElement("span", { style: styles.badge }, actual.scope === "application" ? "application scope" : "namespace scope"), text);
  }
  function Actual({ actual, currency }) {
    const figures = actual.scope === "application" && actual.application ? actual.application : actual.namespace;
    const breakdown = figures.breakdown || {};
    const efficiency = figures.efficiency || {};
    return /* @__PURE__ */ React.createElement("section", { style: styles.section, "data-testid": "actual" }, /* @__PURE__ */ React.createElement(ScopeLabel, { actual }), actual.measuredAtInstall ? /* @__PURE__ */ React.createElement("p", { "data-testid": "install-label" }, /* @__PURE__ */ React.createElement("span", { style: styles.badge }, "measured at install"), "This figure was taken when finops was installed, not after a sync; it is never the baseline of a change.") : null, /* @__PURE__ */ React.createElement("div", { style: styles.figures }, /* @__PURE__ */ React.createElement(Figure2, { label: "Monthly projection", value: formatMoney(figures.monthly, currency), testid: "monthly" }), /* @__PURE__ */ React.createElement(
      Figure2,
      {
        label: "Last 24 h",
        value: formatMoney(figures.cost, currency),
        testid: "last-24h",
        note: `measured over ${formatHours(actual.measuredHours)} h`
      }
    ), /* @__PURE__ */ React.createElement(
      Figure2,
      {
        label: "Workload idle (24 h)",
        value: formatMoney(figures.workloadIdle, currency),
        testid: "idle",
        note: `${formatMoney(figures.workloadIdleMonthly, currency)} a month`
      }
    ), /* @__PURE__ */ React.createElement(
      Figure2,
      {
        label: "Efficiency",
        value: formatRatio(efficiency.total),
        testid: "efficiency",
        note: `CPU ${formatRatio(efficiency.cpu)}, memory ${formatRatio(efficiency.ram)}`
      }
    )), /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": "breakdown" }, /* @__PURE__ */ React.createElement("caption", { style: { ...styles.muted, textAlign: "left" } }, "Last 24 h by resource"), /* @__PURE__ */ React.createElement("tbody", null, RESOURCES2.filter(([key]) => key in breakdown).map(([key, label]) => /* @__PURE__ */ React.createElement("tr", { key }, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, label), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": `breakdown-${key}` }, formatMoney(breakdown[key], currency)))))), /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "measured" }, "Measured ", actual.measuredOn === "install" ? "at install" : "after the sync", " of revision", " ", actual.revision ? actual.revision.slice(0, 12) : "(unknown)", " at ", actual.measuredAt, "."));
  }
  function Trend({ trend, currency }) {
    if (!trend.change || !trend.previous) {
      return /* @__PURE__ */ React.createElement("p", { "data-testid": "trend-none" }, "No earlier sync of the same scope to compare with yet (a measurement at install is never a baseline).");
    }
    const percent = trend.change.percent === null ? "" : ` (${trend.change.percent.startsWith("-") ? "" : "+"}${trend.change.percent} %)`;
    return /* @__PURE__ */ React.createElement("p", { "data-testid": "trend" }, "Since the previous sync (revision ", trend.previous.revision ? trend.previous.revision.slice(0, 12) : "unknown", "):", " ", /* @__PURE__ */ React.createElement("strong", { "data-testid": "trend-change" }, formatChange(trend.change, currency)), percent, " a month, from ", formatMoney(trend.previous.monthly, currency), " to ", formatMoney(trend.latest.monthly, currency), ".");
  }
  function AppTab(props) {
    const application = props.application || props.resource;
    const app = identityOf(application);
    const destination = application && application.spec && application.spec.destination || {};
    const key = `${app.namespace}/${app.name}/${app.project}`;
    const remote = !isLocal(destination);
    const skip = () => Promise.resolve(null);
    const actual = useLoad(() => remote ? skip() : costApi(appPath(app, "actual"), app), [key, remote]);
    const trend = useLoad(() => remote ? skip() : costApi(appPath(app, "trend"), app), [key, remote]);
    const daily = useLoad(() => remote ? skip() : costApi(appPath(app, "daily", { days: 30 }), app), [key, remote]);
    const rightsizing = useLoad(() => remote ? skip() : costApi(appPath(app, "rightsizing"), app), [key, remote]);
    const orphans = useLoad(() => remote ? skip() : costApi(appPath(app, "orphaned-pods"), app), [key, remote]);
    const quality = useLoad(() => remote ? skip() : costApi("/data-quality", app), [key, remote]);
    const gpus = useLoad(() => remote ? skip() : costApi(appPath(app, "gpus", { days: DAYS }), app), [key, remote]);
    const carbon = useLoad(() => remote ? skip() : costApi(appPath(app, "carbon", { days: DAYS }), app), [key, remote]);
    if (remote) {
      return /* @__PURE__ */ React.createElement("div", { style: styles.tab, "data-testid": "finops-app-tab" }, /* @__PURE__ */ React.createElement("p", { style: styles.notice, "data-testid": "remote-notice" }, app.namespace, "/", app.name, " deploys to another cluster (", destination.server || destination.name, "). finops measures only the cluster it runs in, so it has no cost for this application here; see the finops of that cluster."));
    }
    if (actual.status === "loading" || daily.status === "loading") {
      return /* @__PURE__ */ React.createElement("div", { style: styles.tab, "data-testid": "finops-app-tab" }, /* @__PURE__ */ React.createElement(Loading, { what: "the application's cost" }));
    }
    const recorded = actual.status === "ok" && actual.data.recorded;
    const currency = recorded && actual.data.currency || daily.status === "ok" && daily.data.currency || null;
    const noRecord = `No cost record for ${app.namespace}/${app.name} yet.`;
    const unrecorded = (state) => state.status === "ok" && !state.data.recorded;
    return /* @__PURE__ */ React.createElement("div", { style: styles.tab, "data-testid": "finops-app-tab", "data-currency": currency || "" }, /* @__PURE__ */ React.createElement("h3", { style: { marginTop: 0 } }, "Cost of ", app.namespace, "/", app.name), quality.status === "ok" ? /* @__PURE__ */ React.createElement(DataQuality, { dq: quality.data }) : null, quality.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what: "how complete the data is" }) : null, quality.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: quality.error, what: "how complete the data is", testid: "data-quality" }) : null, recorded ? /* @__PURE__ */ React.createElement(Actual, { actual: actual.data, currency }) : null, unrecorded(actual) ? /* @__PURE__ */ React.createElement("p", { className: "finops-empty", "data-testid": "actual-empty" }, "No cost record for ", app.namespace, "/", app.name, " yet: it is measured after its next successful sync (or by the install backfill).") : null, actual.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: actual.error, what: "this application's cost", testid: "actual" }) : null, /* @__PURE__ */ React.createElement(AppGpusCarbon, { gpus, carbon, name: `${app.namespace}/${app.name}` }), /* @__PURE__ */ React.createElement(Card, { title: "Anomaly score (today)", state: actual, what: "the anomaly score", testid: "anomaly" }, (data) => data.recorded ? /* @__PURE__ */ React.createElement(Anomaly, { anomaly: data.anomaly, currency }) : /* @__PURE__ */ React.createElement(Note, { testid: "anomaly-empty" }, noRecord)), /* @__PURE__ */ React.createElement("section", { style: styles.section }, /* @__PURE__ */ React.createElement("h4", null, "Change since the previous sync"), trend.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what: "the trend" }) : null, trend.status === "ok" && trend.data.recorded ? /* @__PURE__ */ React.createElement(Trend, { trend: trend.data, currency: trend.data.currency || currency }) : null, unrecorded(trend) ? /* @__PURE__ */ React.createElement(Note, { testid: "trend-empty" }, "No record yet, so no trend.") : null, trend.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: trend.error, what: "the trend", testid: "trend" }) : null), /* @__PURE__ */ React.createElement("section", { style: styles.section }, /* @__PURE__ */ React.createElement("h4", null, "Last 30 days"), unrecorded(daily) ? /* @__PURE__ */ React.createElement(Note, { testid: "daily-empty" }, "No daily history yet.") : null, daily.status === "ok" && daily.data.recorded ? /* @__PURE__ */ React.createElement(React.Fragment, null, /* @__PURE__ */ React.createElement(Chart, { days: daily.data.days, currency: daily.data.currency || currency }), /* @__PURE__ */ React.createElement("p", { "data-testid": "daily-total" }, "Total ", daily.data.from, " to ", daily.data.to, ": ", formatMoney(daily.data.total, daily.data.currency || currency), daily.data.scope === "namespace" ? " (namespace scope)" : "")) : null, daily.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: daily.error, what: "the daily history", testid: "daily" }) : null), /* @__PURE__ */ React.createElement(Card, { title: "Rightsizing (VerticalPodAutoscalers)", state: rightsizing, what: "the rightsizing advice", testid: "rightsizing" }, (data) => /* @__PURE__ */ React.createElement(Rightsizing, { data, currency })), /* @__PURE__ */ React.createElement(Card, { title: "Orphaned pods", state: orphans, what: "the orphaned pods", testid: "orphans" }, (data) => /* @__PURE__ */ React.createElement(OrphanedPods, { data, currency, where: data.destinationNamespace || "its namespace" })), /* @__PURE__ */ React.createElement(Card, { title: "Cloud estimates (CI)", state: actual, what: "the cloud estimates", testid: "estimates" }, (data) => data.recorded ? /* @__PURE__ */ React.createElement(CloudEstimates, { estimates: data.cloudEstimates }) : /* @__PURE__ */ React.createElement(Note, { testid: "estimates-empty" }, noRecord)));
  }

  // src/ClusterView.jsx
  function gateApp() {
    const vars = typeof window !== "undefined" && window.FINOPS_VARS || {};
    const [namespace, name] = String(vars.GATE_APP || "argocd:cost-gate").split(":");
    return { namespace, name };
  }
  async function loadGate() {
    const gate = gateApp();
    const found = await argoApplication(gate.namespace, gate.name);
    if (!found) throw new ApiError(403, "Argo CD lists no such application for you");
    return { ...gate, project: found && found.spec && found.spec.project || "default" };
  }
  function Namespaces({ data, currency }) {
    const rows = data.namespaces || [];
    if (rows.length === 0) return /* @__PURE__ */ React.createElement("p", { "data-testid": "namespaces-empty" }, "No namespace cost in the last ", data.days, " days.");
    return /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": "namespaces" }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Namespace"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Owner"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Cost centre"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Cost, ", data.days, " days"))), /* @__PURE__ */ React.createElement("tbody", null, rows.map((r) => /* @__PURE__ */ React.createElement("tr", { key: r.namespace, "data-testid": "namespace-row", "data-namespace": r.namespace }, /* @__PURE__ */ React.createElement("td", { style: styles.cell }, r.namespace), /* @__PURE__ */ React.createElement("td", { style: styles.cell }, r.owner || /* @__PURE__ */ React.createElement("em", { style: styles.muted }, "unlabelled")), /* @__PURE__ */ React.createElement("td", { style: styles.cell }, r.costCenter || "—"), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "namespace-cost" }, formatMoney(r.cost, currency))))));
  }
  function Unlabelled({ data, currency }) {
    const rows = (data.namespaces || []).filter((r) => !r.owner);
    if (rows.length === 0) return /* @__PURE__ */ React.createElement("p", { "data-testid": "unlabelled-none" }, "Every namespace has an owner label.");
    return /* @__PURE__ */ React.createElement("ul", { "data-testid": "unlabelled" }, rows.map((r) => /* @__PURE__ */ React.createElement("li", { key: r.namespace, "data-testid": "unlabelled-row" }, r.namespace, ": ", formatMoney(r.cost, currency))));
  }
  function policyText(policy) {
    if (!policy) return "";
    const idle = policy.idle === "separate" ? `idle capacity is its own line, owned by ${policy.idle_owner} (option B)` : "idle capacity is spread over the owners in proportion to their cost (option A)";
    const shared = policy.shared || {};
    const sharedNs = (shared.namespaces || []).join(", ") || "none";
    const split = shared.split === "even" ? "evenly over the lines" : "in proportion to each line's allocated cost";
    return `Policy: ${idle}; shared costs (namespaces: ${sharedNs}; fixed costs: ${(shared.fixed || []).length}) are split ${split}.`;
  }
  function basisText(data) {
    const basis = data.basis || "estimate";
    if (basis === "estimate") return "Basis: estimate (measured at the price book's or list prices).";
    const clusters = data.reconciliation && data.reconciliation.clusters || [];
    const parts = clusters.map((c) => {
      const billed = (c.billed_days || []).map((r) => `${r.start} to ${r.end}`).join(", ") || "no day";
      return `${c.cluster}: billed ${billed} (excluded ends), ${c.estimated_hours} hours still estimated, unreconciled ${formatMoney(c.unreconciled, data.currency)}`;
    });
    return `Basis: ${basis} (the cloud invoice). ${parts.join("; ")}`.trim();
  }
  function Chargeback({ data }) {
    const currency = data.currency;
    return /* @__PURE__ */ React.createElement("div", { "data-testid": "chargeback", "data-currency": currency }, /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "chargeback-policy" }, data.period && data.period.start ? `${String(data.period.start).slice(0, 10)} to ${String(data.period.end).slice(0, 10)} (excluded), ${data.currency}. ` : "", policyText(data.policy)), /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "chargeback-basis", "data-basis": data.basis || "estimate" }, basisText(data)), /* @__PURE__ */ React.createElement("table", { style: styles.table }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Owner"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Allocated"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Idle"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Shared"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Total"))), /* @__PURE__ */ React.createElement("tbody", null, (data.lines || []).map((line) => /* @__PURE__ */ React.createElement("tr", { key: line.owner, "data-testid": "chargeback-line", "data-owner": line.owner }, /* @__PURE__ */ React.createElement("td", { style: styles.cell }, line.owner), /* @__PURE__ */ React.createElement("td", { style: styles.number }, formatMoney(line.allocated, currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number }, formatMoney(line.idle, currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number }, formatMoney(line.shared, currency)), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "chargeback-total" }, formatMoney(line.total, currency))))), /* @__PURE__ */ React.createElement("tfoot", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Total"), /* @__PURE__ */ React.createElement("td", { colSpan: 3 }), /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "chargeback-sum" }, formatMoney(data.total, currency))))));
  }
  function IdleRanking({ data, currency }) {
    const rows = data.applications || [];
    if (rows.length === 0) return /* @__PURE__ */ React.createElement("p", { "data-testid": "idle-ranking-empty" }, "No application-scope record yet to rank.");
    return /* @__PURE__ */ React.createElement("ol", { "data-testid": "idle-ranking" }, rows.map((r) => /* @__PURE__ */ React.createElement("li", { key: `${r.app.namespace}/${r.app.name}`, "data-testid": "idle-row" }, r.app.namespace, "/", r.app.name, " (", r.destinationNamespace, "): ", formatMoney(r.workloadIdleMonthly, currency), " idle a month of ", formatMoney(r.monthly, currency))));
  }
  function AnomalyRanking({ data, currency }) {
    const rows = data.applications || [];
    if (rows.length === 0) return /* @__PURE__ */ React.createElement("p", { "data-testid": "anomaly-ranking-empty" }, "No application has a cost record yet to score.");
    return /* @__PURE__ */ React.createElement(React.Fragment, null, /* @__PURE__ */ React.createElement("p", { style: styles.muted, "data-testid": "anomaly-summary" }, data.anomalous, " anomalous of ", data.scored, " scored (anomalous from a score of ", data.threshold, "); the rest have no score yet, with the reason."), /* @__PURE__ */ React.createElement("table", { style: styles.table, "data-testid": "anomaly-ranking" }, /* @__PURE__ */ React.createElement("thead", null, /* @__PURE__ */ React.createElement("tr", null, /* @__PURE__ */ React.createElement("th", { style: styles.cell }, "Application"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Score"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Today, per day"), /* @__PURE__ */ React.createElement("th", { style: styles.number }, "Baseline median"), /* @__PURE__ */ React.createElement("th", { style: styles.cell }))), /* @__PURE__ */ React.createElement("tbody", null, rows.map((r) => {
      const a = r.anomaly || {};
      const money = (value) => formatMoney(value, a.currency || currency);
      const scored = a.score !== null && a.score !== void 0;
      return /* @__PURE__ */ React.createElement(
        "tr",
        {
          key: `${r.app.namespace}/${r.app.name}`,
          "data-testid": "anomaly-row",
          "data-app": `${r.app.namespace}/${r.app.name}`,
          "data-anomalous": String(a.anomalous === true)
        },
        /* @__PURE__ */ React.createElement("td", { style: styles.cell }, r.app.namespace, "/", r.app.name, " ", /* @__PURE__ */ React.createElement("span", { style: styles.muted }, "(", r.destinationNamespace, ")")),
        /* @__PURE__ */ React.createElement("td", { style: styles.number, "data-testid": "anomaly-row-score" }, scored ? a.score : "—"),
        /* @__PURE__ */ React.createElement("td", { style: styles.number }, scored ? money(a.runRatePerDay) : ""),
        /* @__PURE__ */ React.createElement("td", { style: styles.number }, a.baseline && a.baseline.median ? money(a.baseline.median) : ""),
        /* @__PURE__ */ React.createElement("td", { style: styles.cell, "data-testid": "anomaly-row-note" }, a.anomalous ? /* @__PURE__ */ React.createElement("span", { style: styles.alertBadge }, "anomalous") : scored ? "" : /* @__PURE__ */ React.createElement("span", { style: styles.muted }, a.reason))
      );
    }))));
  }
  function Section({ title, state, what, testid, empty, children }) {
    return /* @__PURE__ */ React.createElement("section", { style: styles.section }, /* @__PURE__ */ React.createElement("h4", null, title), state.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what }) : null, state.status === "error" ? /* @__PURE__ */ React.createElement(Problem, { error: state.error, what, testid, empty }) : null, state.status === "ok" ? children(state.data) : null);
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
    const currency = chargeback.status === "ok" ? chargeback.data.currency : null;
    return /* @__PURE__ */ React.createElement(React.Fragment, null, /* @__PURE__ */ React.createElement(Section, { title: "Namespaces, last 30 days", state: namespaces, what: "the namespaces", testid: "namespaces" }, (data) => /* @__PURE__ */ React.createElement(Namespaces, { data, currency })), /* @__PURE__ */ React.createElement(
      Section,
      {
        title: "This month's chargeback",
        state: chargeback,
        what: "the chargeback",
        testid: "chargeback",
        empty: "No chargeback: the cost API has no policy (POLICY_PATH) or no data for this month."
      },
      (data) => /* @__PURE__ */ React.createElement(Chargeback, { data })
    ), /* @__PURE__ */ React.createElement(Section, { title: `GPUs, last ${DAYS} days`, state: gpus, what: "the GPUs", testid: "gpus" }, (data) => /* @__PURE__ */ React.createElement(ClusterGpus, { data })), /* @__PURE__ */ React.createElement("section", { style: styles.section }, /* @__PURE__ */ React.createElement("h4", null, "Emissions beside cost, last ", DAYS, " days"), /* @__PURE__ */ React.createElement(ClusterCarbon, { team: carbonByTeam, namespace: carbonByNamespace })), /* @__PURE__ */ React.createElement(Section, { title: "Anomalies today", state: anomalies, what: "the anomaly ranking", testid: "anomaly-ranking" }, (data) => /* @__PURE__ */ React.createElement(AnomalyRanking, { data, currency })), /* @__PURE__ */ React.createElement(Section, { title: "Idle spend ranking", state: ranking, what: "the idle ranking", testid: "idle-ranking" }, (data) => /* @__PURE__ */ React.createElement(IdleRanking, { data, currency })), /* @__PURE__ */ React.createElement(Section, { title: "Orphaned pods", state: orphans, what: "the orphaned pods", testid: "orphans" }, (data) => /* @__PURE__ */ React.createElement(OrphanedPods, { data, currency, where: "the managed namespaces" })), /* @__PURE__ */ React.createElement(Section, { title: "Unlabelled namespaces", state: namespaces, what: "the namespaces", testid: "unlabelled" }, (data) => /* @__PURE__ */ React.createElement(Unlabelled, { data, currency })));
  }
  function ClusterView() {
    const gate = useLoad(loadGate, []);
    const named = gateApp();
    return /* @__PURE__ */ React.createElement("div", { style: styles.tab, "data-testid": "finops-cluster-view" }, /* @__PURE__ */ React.createElement("h3", { style: { marginTop: 0 } }, "Cluster costs"), gate.status === "loading" ? /* @__PURE__ */ React.createElement(Loading, { what: "your access" }) : null, gate.status === "error" ? [401, 403, 404].includes(gate.error.status) ? /* @__PURE__ */ React.createElement("p", { style: styles.error, role: "alert", "data-testid": "forbidden" }, "Cluster-wide costs are shown only to those who may read the application ", named.namespace, "/", named.name, ", and you may not (", gate.error.message, "). Ask an Argo CD administrator for read access to it.") : /* @__PURE__ */ React.createElement(Problem, { error: gate.error, what: "your access to the cluster view", testid: "gate" }) : null, gate.status === "ok" ? /* @__PURE__ */ React.createElement(Reports, { gate: gate.data }) : null);
  }

  // src/index.jsx
  ((window2) => {
    const api = window2.extensionsAPI;
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
})();

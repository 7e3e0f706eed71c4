// Amounts arrive as exact decimal strings ("12.34", "-3.10") next to integer micros; they are shown
// as they are, never through a float, so what a person reads is what the API computed. Anything
// that is not such a string (missing, null, a number, garbage) shows as a dash, never "NaN".

const DECIMAL = /^-?\d+(\.\d+)?$/;

export function isAmount(value) {
  return typeof value === "string" && DECIMAL.test(value);
}

/** "1234.50" -> "1,234.50": grouping of the integer part only, on the string. */
function grouped(amount) {
  const negative = amount.startsWith("-");
  const [whole, fraction] = (negative ? amount.slice(1) : amount).split(".");
  const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${negative ? "-" : ""}${withCommas}${fraction === undefined ? "" : `.${fraction}`}`;
}

/** `value`: a decimal string or {amount, micros}; `currency`: ISO code or null (not known). */
export function formatMoney(value, currency) {
  const amount = value && typeof value === "object" ? value.amount : value;
  if (!isAmount(amount)) return "—";
  return `${grouped(amount)} ${currency || "(currency unknown)"}`;
}

/** A signed change: "+30.00 USD" / "-4.10 USD". */
export function formatChange(value, currency) {
  const amount = value && typeof value === "object" ? value.amount : value;
  if (!isAmount(amount)) return "—";
  return (amount.startsWith("-") ? "" : "+") + formatMoney(amount, currency);
}

/** An efficiency fraction ("0.4321") as a percentage ("43.2 %"); a dash when not measured. */
export function formatRatio(value) {
  if (!isAmount(value)) return "—";
  const percent = Number(value) * 100;
  return Number.isFinite(percent) ? `${percent.toFixed(1)} %` : "—";
}

/** Micros as a plain number, for drawing only (never displayed). */
export function microsOf(value) {
  const micros = value && typeof value === "object" ? value.micros : value;
  return typeof micros === "number" && Number.isFinite(micros) ? micros : 0;
}

/** Seconds as a short age: "45 min", "5 h", "8 days"; a dash when not a whole number. */
export function formatAge(seconds) {
  if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 0) return "—";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} days`;
}

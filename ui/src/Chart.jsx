// The 30-day daily chart: one bar per day, drawn in SVG (no charting library). Heights come from
// the exact micros; labels are the API's decimal strings. Today's partial day is drawn hollow.
import { formatMoney, microsOf } from "./money.js";
import { styles } from "./states.jsx";

const WIDTH = 640;
const HEIGHT = 150;
const TOP = 8;

export function Chart({ days, currency }) {
  if (!Array.isArray(days) || days.length === 0) {
    return (
      <p className="finops-empty" data-testid="daily-empty">
        No daily history yet.
      </p>
    );
  }
  const most = Math.max(1, ...days.map((d) => Math.max(0, microsOf(d.cost))));
  const peak = days.reduce((a, d) => (microsOf(d.cost) > microsOf(a.cost) ? d : a), days[0]);
  const slot = WIDTH / days.length;
  const bar = Math.max(1, slot * 0.7);
  return (
    <figure style={{ margin: 0 }} data-testid="daily-chart" data-days={days.length}>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT + TOP}`}
        width="100%"
        style={{ maxWidth: `${WIDTH}px`, display: "block" }}
        role="img"
        aria-label={`Cost per day, ${days[0].day} to ${days[days.length - 1].day}`}
      >
        <line x1="0" y1={HEIGHT + TOP} x2={WIDTH} y2={HEIGHT + TOP} stroke="#ccd6dd" />
        {days.map((d, i) => {
          const h = (Math.max(0, microsOf(d.cost)) / most) * HEIGHT;
          const partial = d.final === false;
          const note = !partial ? "" : i === days.length - 1 ? ` (today so far, ${d.hours} h)` : " (not recorded yet)";
          return (
            <rect
              key={d.day}
              data-testid="daily-point"
              data-day={d.day}
              data-amount={d.cost && d.cost.amount}
              data-final={String(d.final !== false)}
              x={i * slot + (slot - bar) / 2}
              y={TOP + HEIGHT - h}
              width={bar}
              height={Math.max(h, 0.5)}
              fill={partial ? "none" : "#0dadea"}
              stroke="#0dadea"
            >
              <title>
                {`${d.day}: ${formatMoney(d.cost, currency)}${note}`}
              </title>
            </rect>
          );
        })}
      </svg>
      <figcaption style={styles.muted}>
        {days[0].day} to {days[days.length - 1].day}: one bar per day; highest {formatMoney(peak.cost, currency)} on{" "}
        {peak.day}
        {days[days.length - 1].final === false ? "; hollow bars are not final (today, still counting, or a day not recorded yet)" : ""}.
      </figcaption>
    </figure>
  );
}

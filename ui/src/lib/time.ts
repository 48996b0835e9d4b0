// Times and dates as the UI shows them: 24-hour clock and ISO dates, the same in every locale.
// Plain arithmetic on Date, not Intl: locale formatting pulls ICU's calendar and time-zone
// data into the web process (several MB, measured) for a few labels.

const pad = (n: number) => String(n).padStart(2, "0");

/** `14:05`, or `14:05:09` with seconds, in local time. */
export function clock(ms: number, seconds = false): string {
  const d = new Date(ms);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return seconds ? `${hm}:${pad(d.getSeconds())}` : hm;
}

/** `2026-12-01`, in local time. */
export function day(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** The clock for a moment today, the date for any other day. */
export function when(ms: number, now: number = Date.now()): string {
  return day(ms) === day(now) ? clock(ms) : day(ms);
}

/**
 * CSV as RFC 4180 writes it (CRLF line ends; a field holding a comma, a quote or a line break
 * quoted, its quotes doubled), and saved through a Blob download, so nothing goes back to the
 * server for it.
 */

export type CsvValue = string | number | null | undefined;

/** A text that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a carriage
 * return first) gets a `'` before it: names are typed by people, and opening the export must
 * not run what they typed. Numbers are written as they are. */
function defused(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

export function csvField(value: CsvValue): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "number" ? String(value) : defused(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(rows: CsvValue[][]): string {
  return rows.map((row) => row.map(csvField).join(",")).join("\r\n") + "\r\n";
}

/** Offer `text` as a file named `name`; the object URL is let go once the click has taken it. */
export function downloadCsv(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

import { describe, expect, it } from "vitest";
import { csvField, toCsv } from "./csv";

describe("csv", () => {
  it.each([
    ["plain", "plain"],
    ["a, b", '"a, b"'],
    ['say "hi"', '"say ""hi"""'],
    ["two\nlines", '"two\nlines"'],
    ["cr\rhere", '"cr\rhere"'],
    ["", ""],
  ])("quotes %j as RFC 4180 does", (value, want) => {
    expect(csvField(value)).toBe(want);
  });

  it("writes numbers as they are and nothing for null", () => {
    expect(csvField(0.000123)).toBe("0.000123");
    expect(csvField(-3)).toBe("-3");
    expect(csvField(null)).toBe("");
    expect(csvField(undefined)).toBe("");
  });

  it("keeps a spreadsheet from running a name as a formula", () => {
    expect(csvField("=HYPERLINK(\"x\")")).toBe('"\'=HYPERLINK(""x"")"');
    expect(csvField("+1")).toBe("'+1");
    expect(csvField("-rm")).toBe("'-rm");
    expect(csvField("@me")).toBe("'@me");
    expect(csvField("a=b")).toBe("a=b");
  });

  it("ends every line with CRLF", () => {
    expect(toCsv([["Agent", "Cost"], ["Ada, the first", 1.5]])).toBe('Agent,Cost\r\n"Ada, the first",1.5\r\n');
  });
});

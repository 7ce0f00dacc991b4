import { describe, expect, it } from "vitest";
import {
  OPERATORS,
  applySuggestion,
  groupByChannel,
  isTextField,
  opensSearch,
  safeSnippet,
  shownOrder,
  step,
  suggest,
  tokenAt,
  type SearchResult,
} from "./search";
import type { Message } from "./types";

const names = {
  people: [{ name: "Owner" }, { name: "Ada Lovelace" }],
  agents: [{ name: "Researcher" }, { name: "Scout" }, { name: "Ada" }],
  channels: [
    { name: "general", type: "group" as const },
    { name: "research notes", type: "group" as const },
    { name: "Scout", type: "dm" as const },
  ],
};

describe("the token at the caret", () => {
  it("is the word around the caret, a quoted name's spaces included", () => {
    expect(tokenAt("hello from:@Sc", 14)).toEqual({ start: 6, end: 14, text: "from:@Sc" });
    expect(tokenAt('x from:@"Ada Lo', 15).text).toBe('from:@"Ada Lo');
    expect(tokenAt("one two", 2)).toEqual({ start: 0, end: 3, text: "one" });
  });
});

describe("suggestions", () => {
  it("lists the operators in an empty box", () => {
    expect(suggest("", 0, names)).toBe(OPERATORS);
    expect(OPERATORS.map((o) => o.label)).toEqual([
      "from:@",
      "in:#",
      "has:file",
      "has:image",
      "has:link",
      "is:thread",
      "before:",
      "after:",
      '"phrase"',
      "-word",
    ]);
  });

  it("offers people and agents after from:, by display name, quoting names with spaces", () => {
    expect(suggest("from:", 5, names).map((s) => s.label)).toEqual([
      "@Ada Lovelace",
      "@Owner",
      "@Ada",
      "@Researcher",
      "@Scout",
    ]);
    const ada = suggest("budget from:@ad", 15, names);
    expect(ada.map((s) => [s.label, s.detail])).toEqual([
      ["@Ada Lovelace", "person"],
      ["@Ada", "agent"],
    ]);
    expect(ada[0].insert).toBe('from:@"Ada Lovelace" ');
    expect(suggest("from:@love", 10, names).map((s) => s.label)).toEqual(["@Ada Lovelace"]);
  });

  it("offers group channels after in:", () => {
    expect(suggest("in:#", 4, names).map((s) => s.label)).toEqual(["#general", "#research notes"]);
    expect(suggest("in:res", 6, names)[0].insert).toBe('in:#"research notes" ');
  });

  it("offers an operator for the start of its name, and nothing inside a plain word", () => {
    expect(suggest("fr", 2, names).map((s) => s.label)).toEqual(["from:@"]);
    expect(suggest("budget", 6, names)).toEqual([]);
    expect(suggest("x", 1, names)).toEqual([]);
  });

  it("a chosen suggestion replaces the token and puts the caret after it", () => {
    const [scout] = suggest("plan from:@Sc later", 13, names);
    expect(applySuggestion("plan from:@Sc later", 13, scout)).toEqual({
      query: "plan from:@Scout later",
      caret: 17,
    });
    expect(applySuggestion("", 0, OPERATORS[0])).toEqual({ query: "from:@", caret: 6 });
  });
});

describe("the snippet", () => {
  it("keeps the server's escaped text and marks", () => {
    const s = "a &lt;b&gt; &amp; <mark>fail</mark>ing &quot;x&quot;";
    expect(safeSnippet(s)).toBe(s);
  });

  it("escapes any other markup, and balances marks", () => {
    expect(safeSnippet('<img src=x onerror="alert(1)"><mark>hit')).toBe(
      '&lt;img src=x onerror="alert(1)"&gt;<mark>hit</mark>',
    );
    expect(safeSnippet("<mark onclick=x>a</mark></mark><script>b</script>")).toBe(
      "&lt;mark onclick=x&gt;a&lt;script&gt;b&lt;/script&gt;",
    );
    expect(safeSnippet("AT&T <MARK>x</MARK>")).toBe("AT&amp;T <mark>x</mark>");
  });

  it("renders to text and marks only", () => {
    const div = document.createElement("div");
    div.innerHTML = safeSnippet('<b>bold</b> <mark>hit</mark> <a href="javascript:x">l</a>');
    expect([...div.querySelectorAll("*")].map((e) => e.tagName)).toEqual(["MARK"]);
  });
});

function result(id: string, channel: string): SearchResult {
  return {
    message: { id, channelId: channel } as Message,
    channel: { id: channel, name: channel, type: "group" },
    snippet: id,
  };
}

describe("results", () => {
  it("group by channel in the order of each channel's best result; arrows follow the groups", () => {
    const list = [result("m1", "a"), result("m2", "b"), result("m3", "a")];
    const groups = groupByChannel(list);
    expect(groups.map((g) => [g.channel.id, g.results.map((r) => r.result.message.id)])).toEqual([
      ["a", ["m1", "m3"]],
      ["b", ["m2"]],
    ]);
    expect(shownOrder(groups).map((r) => r.message.id)).toEqual(["m1", "m3", "m2"]);
  });

  it("arrow steps wrap, and start from either end", () => {
    expect(step(-1, 3, 1)).toBe(0);
    expect(step(-1, 3, -1)).toBe(2);
    expect(step(2, 3, 1)).toBe(0);
    expect(step(0, 3, -1)).toBe(2);
    expect(step(0, 0, 1)).toBe(-1);
  });
});

describe("the keys that open the search", () => {
  const key = (init: KeyboardEventInit, target: EventTarget = document.body) => {
    const event = new KeyboardEvent("keydown", init);
    Object.defineProperty(event, "target", { value: target });
    return event;
  };

  it("Ctrl+K and Cmd+K anywhere, / outside text fields", () => {
    const box = document.createElement("textarea");
    expect(opensSearch(key({ key: "k", ctrlKey: true }, box))).toBe(true);
    expect(opensSearch(key({ key: "K", metaKey: true }))).toBe(true);
    expect(opensSearch(key({ key: "/" }))).toBe(true);
    expect(opensSearch(key({ key: "/" }, box))).toBe(false);
    expect(opensSearch(key({ key: "k" }))).toBe(false);
  });

  it("knows text fields from buttons", () => {
    const text = document.createElement("input");
    const check = document.createElement("input");
    check.type = "checkbox";
    expect(isTextField(text)).toBe(true);
    expect(isTextField(check)).toBe(false);
    expect(isTextField(document.createElement("button"))).toBe(false);
  });
});

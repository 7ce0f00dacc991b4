import { describe, expect, it } from "vitest";
import { markMentions } from "./mentionHighlight";

function html(source: string, names: string[]): string {
  const root = document.createElement("div");
  root.innerHTML = source;
  markMentions(root, names);
  return root.innerHTML;
}

describe("markMentions", () => {
  it("marks each @Name of the person, ignoring case, as a whole name", () => {
    expect(html("<p>hi @ada lovelace, and @Ada Lovelace!</p>", ["Ada Lovelace"])).toBe(
      '<p>hi <span class="mention-me">@ada lovelace</span>, and <span class="mention-me">@Ada Lovelace</span>!</p>',
    );
    expect(html("<p>@Adam and mail@Ada</p>", ["Ada"])).toBe("<p>@Adam and mail@Ada</p>");
  });

  it("leaves code and links alone, and marks an id mention", () => {
    expect(html("<p><code>@Ada</code> <a href='/'>@Ada</a> @user_1</p>", ["Ada", "user_1"])).toBe(
      '<p><code>@Ada</code> <a href="/">@Ada</a> <span class="mention-me">@user_1</span></p>',
    );
  });

  it("takes text as text and marks nothing twice", () => {
    const root = document.createElement("div");
    root.innerHTML = "<p>&lt;b&gt;@Ada&lt;/b&gt;</p>";
    expect(markMentions(root, ["Ada"])).toBe(1);
    expect(markMentions(root, ["Ada"])).toBe(0);
    expect(root.querySelectorAll("b")).toHaveLength(0);
  });
});

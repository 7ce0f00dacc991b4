import { describe, expect, it } from "vitest";
import { describe as words } from "./notifications.svelte";

describe("a notification's words", () => {
  it("says who mentioned the person where, and the start of the text", () => {
    expect(words({ content: "hi  @Ada\nlook", type: "text" }, "Owner", { name: "general", type: "group" }, true)).toEqual({
      title: "Owner mentioned you in #general",
      body: "hi @Ada look",
    });
  });

  it("names a direct message by its name, and files by what they are", () => {
    expect(words({ content: "/uploads/x.png", type: "image" }, "Scout", { name: "Scout", type: "dm" }, false)).toEqual({
      title: "Scout in Scout",
      body: "sent an image",
    });
    expect(words({ content: "x".repeat(300), type: "text" }, "A", undefined, false).body).toHaveLength(140);
  });
});

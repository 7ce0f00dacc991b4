import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vitest/config";

// Unit tests for src/lib: jsdom stands in for the page (DOMPurify, location, localStorage), and
// the Svelte plugin compiles the `.svelte.ts` modules' runes for the browser.
export default defineConfig({
  plugins: [svelte()],
  resolve: { conditions: ["browser"] },
  test: {
    environment: "jsdom",
    environmentOptions: { jsdom: { url: "http://palaver.test/" } },
    include: ["src/**/*.test.ts"],
  },
});

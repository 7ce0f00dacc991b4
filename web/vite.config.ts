import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vite";
import { thirdPartyNotices } from "./notices";

// The build lands inside the Python package, committed, so `pip install` serves it with no Node.
export default defineConfig({
  plugins: [svelte(), thirdPartyNotices()],
  base: "/",
  build: {
    outDir: "../src/palaver/web/dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:8000",
      "/uploads": "http://127.0.0.1:8000",
      "/ws": { target: "ws://127.0.0.1:8000", ws: true },
    },
  },
});

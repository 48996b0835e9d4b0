import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";

// The webview front end lives in ui/ and builds to ui/dist (tauri.conf.json frontendDist).
export default defineConfig({
  root: "ui",
  plugins: [svelte()],
  clearScreen: false,
  server: { port: 5173, strictPort: true, watch: { ignored: ["**/src-tauri/**", "**/target/**"] } },
  build: { outDir: "dist", emptyOutDir: true, target: "safari15", modulePreload: { polyfill: false } },
  test: {
    root: ".",
    include: ["ui/src/**/*.test.ts"],
    environment: "jsdom",
    setupFiles: ["ui/src/test/setup.ts"],
  },
  resolve: process.env.VITEST ? { conditions: ["browser"] } : undefined,
});

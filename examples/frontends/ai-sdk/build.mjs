// `npm run build`: bundle src/ into dist/ with esbuild. `npm start`: build, then serve dist/ on a
// loopback port (PORT, default 5173) and print the page's address.
import * as esbuild from "esbuild";

const options = {
  entryPoints: ["src/main.jsx", "src/index.html"],
  outdir: "dist",
  bundle: true,
  minify: true,
  sourcemap: true,
  format: "esm",
  target: "es2022",
  loader: { ".html": "copy" },
  jsx: "automatic",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  logLevel: "warning",
};

await esbuild.build(options);
if (process.argv.includes("--serve")) {
  const context = await esbuild.context(options);
  const { port } = await context.serve({ host: "127.0.0.1", port: Number(process.env.PORT ?? 5173), servedir: "dist" });
  console.log(`AI SDK example: http://127.0.0.1:${port}/?server=http://127.0.0.1:8765&token=YOUR_TOKEN`);
} else {
  console.log("built dist/");
}

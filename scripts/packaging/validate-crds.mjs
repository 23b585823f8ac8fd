// Validates the chart's custom resources (ServiceMonitor, PrometheusRule, ScaledObject) with the validators that the
// pinned @kubernetes-models packages generate from the upstream CRD schemas. They check types, enums
// and required fields; like the CRDs' own schemas they do not reject unknown fields.
// Usage: node validate-crds.mjs <tools-dir-with-node_modules> <crds.json>...
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [toolsDir, ...files] = process.argv.slice(2);
const load = async (path) => import(pathToFileURL(`${toolsDir}/node_modules/@kubernetes-models/${path}.js`).href);
const kinds = {
  "monitoring.coreos.com/v1/ServiceMonitor": (await load("prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor"))
    .ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": (await load("prometheus-operator/monitoring.coreos.com/v1/PrometheusRule"))
    .PrometheusRule,
  "keda.sh/v1alpha1/ScaledObject": (await load("keda/keda.sh/v1alpha1/ScaledObject")).ScaledObject,
};

let failed = 0;
for (const file of files) {
  for (const object of JSON.parse(readFileSync(file, "utf8"))) {
    const id = `${object.apiVersion}/${object.kind}`;
    const Model = kinds[id];
    if (!Model) {
      console.log(`  FAIL ${file}: no validator for ${id}`);
      failed++;
      continue;
    }
    try {
      new Model(object).validate();
      console.log(`  ok   ${id} ${object.metadata?.name} (${file.split("/").pop()})`);
    } catch (error) {
      console.log(`  FAIL ${id} ${object.metadata?.name}: ${error.message}`);
      failed++;
    }
  }
}
process.exit(failed === 0 ? 0 : 1);

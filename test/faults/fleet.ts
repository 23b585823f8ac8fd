import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import fs from "node:fs";
import { sleep } from "./settings.js";

/** One `agent-graph-projector run` child process. */
export class Instance {
  readonly child: ChildProcessWithoutNullStreams;
  output = "";
  /** The port of /metrics, /readyz and /healthz, from the start-up line. */
  metricsPort: number | undefined;
  exitCode: number | null | undefined;
  signal: NodeJS.Signals | null | undefined;
  expectedExit = false;
  readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ["bin/agent-graph-projector.js", "run"], {
      env: { ...process.env, ...env, METRICS_PORT: "0", METRICS_HOST: "127.0.0.1", LOG_LEVEL: "info" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const append = (chunk: Buffer) => {
      this.output += chunk.toString();
      // Read before the output is trimmed: an outage's reconnect errors fill 2 MB in minutes.
      this.metricsPort ??= Number(/"metricsPort":(\d+)/.exec(this.output)?.[1]) || undefined;
      if (this.output.length > 2_000_000) this.output = this.output.slice(-1_000_000);
    };
    this.child.stdout.on("data", append);
    this.child.stderr.on("data", append);
    this.exited = new Promise((resolve) =>
      this.child.on("close", (code, signal) => {
        this.exitCode = code;
        this.signal = signal;
        resolve();
      }),
    );
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Lines of the pino log whose message contains `text`. */
  count(text: string): number {
    return this.output.split("\n").filter((line) => line.includes(`"msg":"${text}`)).length;
  }

  async started(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes('"msg":"projector running"')) {
      if (!this.running) throw new Error(`${this.name} exited before it ran:\n${this.output.slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not start:\n${this.output.slice(-3000)}`);
      await sleep(100);
    }
  }

  async metric(name: string): Promise<number> {
    const text = await (
      await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`, { signal: AbortSignal.timeout(5000) })
    ).text();
    return text
      .split("\n")
      .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  }

  kill(): Promise<void> {
    this.expectedExit = true;
    this.child.kill("SIGKILL");
    return this.exited;
  }

  async terminate(): Promise<void> {
    this.expectedExit = true;
    this.child.kill("SIGTERM");
    await this.exited;
    if (this.exitCode !== 0)
      throw new Error(`${this.name} did not stop cleanly (exit ${this.exitCode}):\n${this.output.slice(-3000)}`);
  }
}

/** The projector instances of one scenario; an instance that dies on its own fails the scenario. */
export class Fleet {
  readonly instances: Instance[] = [];
  private next = 0;
  /** Driver-level transaction retries and infrastructure pauses of instances that are gone. */
  private retired = { txRetries: 0, pauses: 0 };

  constructor(private readonly env: Record<string, string>) {}

  async add(n = 1): Promise<Instance[]> {
    const added = Array.from({ length: n }, () => new Instance(`projector-${++this.next}`, this.env));
    this.instances.push(...added);
    await Promise.all(added.map((instance) => instance.started()));
    return added;
  }

  live(): Instance[] {
    return this.instances.filter((instance) => instance.running && !instance.expectedExit);
  }

  /** Fails with the instance's log when one exited without being told to. */
  assertNoneDied(): void {
    for (const instance of this.instances) {
      if (!instance.running && !instance.expectedExit)
        throw new Error(
          `${instance.name} exited on its own (code ${instance.exitCode}, signal ${instance.signal}):\n${instance.output.slice(-4000)}`,
        );
    }
  }

  /**
   * Checks every 200 ms that no instance exited on its own: a finding, whatever the scenario is doing
   * at the time. `rethrow()` throws the first such death; `stop()` ends the watch.
   */
  watchdog(): { rethrow(): void; stop(): void } {
    let died: unknown;
    const timer = setInterval(() => {
      try {
        this.assertNoneDied();
      } catch (error) {
        died ??= error;
      }
    }, 200);
    return {
      rethrow() {
        if (died) throw died;
      },
      stop: () => clearInterval(timer),
    };
  }

  async retire(instance: Instance, how: "kill" | "terminate"): Promise<void> {
    if (how === "terminate") this.retired.txRetries += await instance.metric("agp_transaction_retries_total");
    this.retired.pauses += instance.count("infrastructure failure");
    if (how === "kill") await instance.kill();
    else await instance.terminate();
  }

  /** Transaction retries (Neo4j deadlocks, timeouts, lost connections) and partition pauses, all instances. */
  async stats(): Promise<{ txRetries: number; pauses: number; warnings: number }> {
    let { txRetries, pauses } = this.retired;
    for (const instance of this.live()) {
      txRetries += await instance.metric("agp_transaction_retries_total").catch(() => 0);
      pauses += instance.count("infrastructure failure");
    }
    return { txRetries, pauses, warnings: this.warnings() };
  }

  /** Warnings and errors the instances logged (kafkajs reconnects, Neo4j failures, pauses). */
  warnings(): number {
    return this.instances.reduce(
      (sum, instance) => sum + instance.output.split("\n").filter((line) => /"level":(40|50|60)/.test(line)).length,
      0,
    );
  }

  /** With FAULTS_LOG_DIR set, every instance's log is written there, one file per instance. */
  saveLogs(scenario: string): void {
    const dir = process.env.FAULTS_LOG_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    for (const instance of this.instances) fs.writeFileSync(`${dir}/${scenario}-${instance.name}.log`, instance.output);
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.instances.map(async (instance) => {
        if (!instance.running) return;
        instance.expectedExit = true;
        instance.child.kill("SIGTERM");
        const timer = setTimeout(() => instance.child.kill("SIGKILL"), 30_000);
        await instance.exited;
        clearTimeout(timer);
      }),
    );
  }
}

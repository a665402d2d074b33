// Drives one AG-UI thread with the official client (@ag-ui/client's HttpAgent) for
// tests/test_agui.py: one JSON command per line on stdin, one JSON report per line on stdout.
//
//   {"op": "run"}                                  a run with no resume
//   {"op": "answer", "status": "resolved", "payload": ...}
//                                                  answers every pending interrupt through
//                                                  the client's buildResumeArray
//   {"op": "raw", "resume": [...]}                 a run with this resume, as given, from a
//                                                  fresh agent on the same thread (no
//                                                  pending interrupts of its own)
//
// A report: {"outcome": "success" | "interrupt" | "cancelled" | "error", "result",
// "interrupts", "error": {"message", "code"}, "pending": [ids], "texts": [the contents of
// the run's new assistant messages], "thrown": message}.
import { createInterface } from "node:readline";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, token, threadId] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };
const agent = new HttpAgent({ url, headers, threadId });

async function run(target, parameters) {
  const report = {};
  const subscriber = {
    onRunFinishedEvent(params) {
      report.outcome = params.outcome;
      if (params.outcome === "interrupt") report.interrupts = params.interrupts;
      if (params.outcome === "success") report.result = params.result;
    },
    onRunErrorEvent({ event }) {
      report.outcome = "error";
      report.error = { message: event.message, code: event.code };
    },
  };
  try {
    const { result, newMessages } = await target.runAgent(parameters, subscriber);
    if (report.outcome === "success") report.result = result;
    const texts = newMessages.filter((m) => m.role === "assistant").map((m) => m.content);
    if (texts.length > 0) report.texts = texts;
  } catch (error) {
    report.thrown = String(error && error.message ? error.message : error);
  }
  report.pending = target.pendingInterrupts.map((interrupt) => interrupt.id);
  return report;
}

async function handle(command) {
  if (command.op === "run") return run(agent, {});
  if (command.op === "answer") {
    const responses = {};
    for (const interrupt of agent.pendingInterrupts) {
      responses[interrupt.id] =
        command.status === "cancelled"
          ? { status: "cancelled" }
          : { status: "resolved", payload: command.payload };
    }
    return run(agent, { resume: buildResumeArray(agent.pendingInterrupts, responses) });
  }
  if (command.op === "raw") {
    const fresh = new HttpAgent({ url, headers, threadId });
    return run(fresh, { resume: command.resume });
  }
  return { thrown: `unknown op ${command.op}` };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const report = await handle(JSON.parse(line));
  process.stdout.write(JSON.stringify(report) + "\n");
}

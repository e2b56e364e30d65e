// The dashboard's schedules page: one row per schedule of the queue (schedules.list), with its
// pause or resume, run-now and remove buttons unless read-only. Everything on it comes from Redis and is rendered by
// Hono's `html` template, which escapes it: a definition someone wrote into the schedules hash by
// hand (a group or payload holding markup) shows as text.
import { html } from "hono/html";
import type { ScheduleInfo } from "../../shared/queue-schedules.js";
import { counted } from "../output.js";
import { setBy, whenOf } from "../schedule-text.js";
import { clock } from "./live.js";
import { csrfField, layout, type PageContext, time } from "./pages.js";

/** Most payload characters a row shows (the task page of a slot shows the whole). */
export const SCHEDULE_PAYLOAD_SHOWN = 200;

/** The payload of a definition as a row shows it: its JSON, cut at SCHEDULE_PAYLOAD_SHOWN characters. */
function payloadText(payload: unknown): string {
  if (payload === undefined) return "";
  const text = JSON.stringify(payload) ?? "";
  return text.length > SCHEDULE_PAYLOAD_SHOWN ? `${text.slice(0, SCHEDULE_PAYLOAD_SHOWN)}…` : text;
}

export function schedulesPage(ctx: PageContext, schedules: ScheduleInfo[], now: number) {
  const row = (info: ScheduleInfo) => {
    const { definition } = info;
    const last =
      info.lastTaskId === undefined
        ? html`<span class="note">none yet</span>`
        : html`${info.lastSlotMs === undefined ? "" : time(info.lastSlotMs, now)}
          ${
            info.lastTaskState === undefined
              ? html`<span class="note" data-field="lastState">gone</span>`
              : html`<a href="${ctx.base}/task/${encodeURIComponent(info.lastTaskId)}" data-field="lastState">${info.lastTaskState}</a>`
          }`;
    const control = ctx.readOnly
      ? ""
      : html`<td><form method="post" action="${ctx.base}/action" class="inline">
          ${csrfField(ctx)}<input type="hidden" name="back" value="${ctx.base}/schedules">
          <input type="hidden" name="schedule" value="${info.name}">
          ${
            info.paused
              ? html`<button name="action" value="schedule-resume" data-confirm="Resume the schedule ${info.name}? Its slots from now on are made; those of the pause are passed over.">Resume</button>`
              : html`<button name="action" value="schedule-pause" class="danger" data-confirm="Pause the schedule ${info.name}? No slot is made while it is paused.">Pause</button>`
          }
          <button name="action" value="schedule-run" data-confirm="Run the schedule ${info.name} now? One task of it is enqueued now, besides its slots.">Run now</button>
          <button name="action" value="schedule-remove" class="danger" data-confirm="Remove the schedule ${info.name}? No slot of it is made any more; its tasks already made stay.${info.declared ? " It is declared: its deployment's next cold start sets it again." : ""}">Remove</button>
        </form></td>`;
    return html`<tr data-schedule="${info.name}" data-paused="${String(info.paused)}">
      <td data-field="name">${info.name}</td>
      <td data-field="when">${whenOf(definition)}</td>
      <td data-field="next">${info.paused ? html`<span class="badge paused">paused</span>` : info.aside !== undefined ? html`<span class="badge aside">set aside</span><div class="small" data-field="aside">${info.aside}</div>` : info.nextSlotMs === undefined ? html`<span class="note">none</span>` : time(info.nextSlotMs, now)}</td>
      <td data-field="last">${last}</td>
      <td class="num" data-field="counts"><span data-field="made">${info.made}</span> / <span data-field="passedOver">${info.passedOver}</span></td>
      <td data-field="task"><span data-field="type">${definition.type}</span>${definition.group === undefined ? "" : html`<div class="small">group <span data-field="group">${definition.group}</span></div>`}${
        definition.payload === undefined
          ? ""
          : html`<div class="small">payload <code data-field="payload">${payloadText(definition.payload)}</code></div>`
      }</td>
      <td data-field="set-by">${setBy(info)}</td>
      ${control}
    </tr>`;
  };
  return layout(
    ctx,
    "Schedules",
    html`<p class="note" data-schedules-summary>${
      schedules.length === 0
        ? "The queue has no schedules (leaseq schedules set, or declare them in the task module)."
        : `${counted(schedules.length, "schedule")}, in the order of their next planning (paused ones last). Each slot becomes one task <schedule>@<slot>.`
    }</p>
      ${
        schedules.length > 0
          ? html`<table class="schedules">
          <thead><tr><th>name</th><th>when</th><th>next slot</th><th>last slot and its task</th><th class="num">made / passed over</th><th>task</th><th>set by</th>${ctx.readOnly ? "" : html`<th></th>`}</tr></thead>
          <tbody>${schedules.map(row)}</tbody>
        </table>`
          : ""
      }
      <p class="note">As of ${clock(now)} UTC. Reload to refresh.</p>`,
  );
}

/**
 * One entry point for rendering a plan in any of its output formats (terminal text, a pull
 * request's markdown, versioned JSON), and the list of those formats for flags. Each format's
 * rendering lives in its own file beside this one, loaded when a plan is rendered in it: the
 * JSON format brings the plan's whole schema (zod), which a terminal's text never needs.
 */
import type { Plan } from '../model.js';

/** Output formats of a plan: terminal text, a PR comment's markdown, versioned JSON. */
export const PLAN_FORMATS = ['text', 'markdown', 'json'] as const;
export type PlanFormat = (typeof PLAN_FORMATS)[number];

/** Narrows a user's format choice; undefined when it is not one. */
export function planFormat(value: string): PlanFormat | undefined {
  return (PLAN_FORMATS as readonly string[]).includes(value) ? (value as PlanFormat) : undefined;
}

/** Renders a plan in one of {@link PLAN_FORMATS}; `color` only matters for text. */
export async function renderPlanAs(plan: Plan, format: PlanFormat, options: { color?: boolean } = {}): Promise<string> {
  if (format === 'json') return (await import('./render-json.js')).renderPlanJson(plan);
  if (format === 'markdown') return `${(await import('./render-markdown.js')).renderPlanMarkdown(plan)}\n`;
  return (await import('./render-text.js')).renderPlanText(plan, { color: options.color ?? false });
}

/**
 * One entry point for rendering a plan in any of its output formats (terminal text, a pull
 * request's markdown, versioned JSON), and the list of those formats for flags. Each format's
 * rendering lives in its own file beside this one.
 */
import type { Plan } from '../model.js';
import { renderPlanJson } from './render-json.js';
import { renderPlanMarkdown } from './render-markdown.js';
import { renderPlanText } from './render-text.js';

/** Output formats of a plan: terminal text, a PR comment's markdown, versioned JSON. */
export const PLAN_FORMATS = ['text', 'markdown', 'json'] as const;
export type PlanFormat = (typeof PLAN_FORMATS)[number];

/** Narrows a user's format choice; undefined when it is not one. */
export function planFormat(value: string): PlanFormat | undefined {
  return (PLAN_FORMATS as readonly string[]).includes(value) ? (value as PlanFormat) : undefined;
}

/** Renders a plan in one of {@link PLAN_FORMATS}; `color` only matters for text. */
export function renderPlanAs(plan: Plan, format: PlanFormat, options: { color?: boolean } = {}): string {
  if (format === 'json') return renderPlanJson(plan);
  if (format === 'markdown') return `${renderPlanMarkdown(plan)}\n`;
  return renderPlanText(plan, { color: options.color ?? false });
}

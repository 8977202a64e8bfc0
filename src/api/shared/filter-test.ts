import { invalid } from '../errors.js';
import { FilterBudget, FilterBudgetExceeded, filterProblem, filterTester } from '../../domain/content-filter.js';
import { outboundEnvelope } from '../../domain/envelope.js';

/**
 * The filter-test routes' verdict (native and portal): whether `stored`, or the draft `body.filter` when
 * one is given, lets a message with this payload and event type through, as fan-out would decide. An
 * evaluation that needs more than `budgetSteps` (HERALD_FILTER_BUDGET) is a 400 naming the bound.
 */
export function filterTest(
  stored: string | null,
  body: { payload: object; event_type?: string | undefined; filter?: object | null | undefined },
  now: number,
  budgetSteps: number,
): { matches: boolean } {
  if (body.filter != null) {
    const problem = filterProblem(body.filter);
    if (problem) throw invalid(problem);
  }
  const filter = body.filter === undefined ? stored : body.filter === null ? null : JSON.stringify(body.filter);
  const envelope = outboundEnvelope(body.event_type ?? '', now, JSON.stringify(body.payload));
  if (filter === null) return { matches: true };
  try {
    return { matches: filterTester(filter)(envelope, new FilterBudget(budgetSteps)) };
  } catch (error) {
    if (error instanceof FilterBudgetExceeded) throw invalid(error.message);
    throw error;
  }
}

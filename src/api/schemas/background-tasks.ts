import { Type } from 'typebox';
import { BACKGROUND_TASK_KINDS, BACKGROUND_TASK_STATUSES } from '../../domain/states.js';
import { EXAMPLE_TIME, literals, Nullable, Timestamp } from './common.js';

// A background task (an endpoint's recovery) and its progress.

export const BackgroundTask = Type.Object(
  {
    object: Type.Literal('background_task'),
    id: Type.String({ description: 'task_…' }),
    kind: literals(BACKGROUND_TASK_KINDS),
    status: literals(BACKGROUND_TASK_STATUSES),
    created_at: Timestamp,
    updated_at: Timestamp,
    data: Type.Object({ deliveries_enqueued: Type.Integer({ description: 'Deliveries given a new attempt so far' }) }),
    progress: Type.Object(
      {
        done: Type.Integer({ description: 'Deliveries given a new attempt (or sent) so far' }),
        total: Nullable(
          Type.Integer({
            description: 'How many a bulk replay matched when its first batch counted them; null: not known',
          }),
        ),
      },
      { description: 'How far the task has come' },
    ),
  },
  {
    examples: [
      {
        object: 'background_task',
        id: 'task_01jd5x3k8m2n4p6q8r0s2t4v6w',
        kind: 'endpoint.recover',
        status: 'running',
        created_at: EXAMPLE_TIME,
        updated_at: EXAMPLE_TIME,
        data: { deliveries_enqueued: 500 },
        progress: { done: 500, total: null },
      },
    ],
  },
);

// A database for this file alone (pristineDatabase({ per: 'file' })).
import { test } from 'vitest';
import { pristineDatabase } from 'pristine-client/vitest';
import { provePristine } from './isolation.mjs';

const db = pristineDatabase({ per: 'file' });

test('starts pristine and sees only its own write', () => provePristine(db.lease, 'per-file'));

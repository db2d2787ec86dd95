// The CommonJS entries have the same types.
import pristine = require('pristine-client');
import jest = require('pristine-client/jest');

const c: pristine.Client = new pristine.Client({ url: 'http://127.0.0.1:7878', token: 't' });
const teardown: () => Promise<void> = jest.globalTeardown;
void [c, teardown];

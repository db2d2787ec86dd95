'use strict';
// globalTeardown: 'pristine-client/jest/teardown' in a Jest config.
module.exports = require('../jest.cjs').globalTeardown;

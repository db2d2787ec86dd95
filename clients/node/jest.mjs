// pristine-client/jest (ES module entry): the same functions as jest.cjs.
import m from './jest.cjs';

export const { globalSetup, globalTeardown, pristineDatabase } = m;
export default m;

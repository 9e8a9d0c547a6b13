/**
 * @module model-server
 * The scripted model the harness boots hosts against is the shipped one (`dsh-fold try`'s):
 * `bin/host/model-server.mjs`. Re-exported here so the suites keep their imports.
 */
export { isTitleRequest, pairingViolation, sequence, startModelServer } from '../../../bin/host/model-server.mjs'

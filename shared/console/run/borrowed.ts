/**
 * The run pages' one seam onto what other console modules provide (the 404 page, times, phase
 * badges, action forms, which actions a person may take), so the run pages name them once.
 */
export { actionForm } from '../action-form.js'
export { allowedActions } from '../auth/permissions.js'
export { phaseBadge, phaseClass } from '../pages/common.js'
export { notFoundPage } from '../pages/errors.js'
export { durationText, timeTag } from '../time.js'

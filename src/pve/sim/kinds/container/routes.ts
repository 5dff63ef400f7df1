/**
 * The container kind's routes (`/nodes/{node}/lxc`): the shared guest routes for the container
 * row of the flavour table, and the handlers pve-container has its own way.
 */
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { sharedGuestRoutes } from '../../guest/routes.js';
import { anyone, guestModify, route, type RouteModule } from '../../route.js';
import { clonePermission } from '../../guest/clone.js';
import { cloneContainer } from './clone.js';
import { createContainer } from './create.js';
import { destroyContainer } from './destroy.js';
import { moveContainerVolume } from './move-volume.js';
import { rebootContainer } from './reboot.js';
import { resizeContainer } from './resize.js';
import { templateContainer } from './template.js';
import { updateContainerConfig } from './update-config.js';

const CT = GUEST_FLAVOURS.lxc;
const L = CT.apiPath;

/** The container kind. */
export const containerRoutes: RouteModule = {
  name: 'container',
  routes: [
    ...sharedGuestRoutes(CT),
    route('POST', L, anyone, createContainer, true),
    route('PUT', `${L}/{vmid}/config`, guestModify(CT.configPrivileges), updateContainerConfig, true),
    route('POST', `${L}/{vmid}/status/reboot`, guestModify('VM.PowerMgmt'), rebootContainer, true),
    route('PUT', `${L}/{vmid}/resize`, guestModify('VM.Config.Disk'), resizeContainer, true),
    route('POST', `${L}/{vmid}/move_volume`, guestModify('VM.Config.Disk'), moveContainerVolume, true),
    route('DELETE', `${L}/{vmid}`, guestModify('VM.Allocate'), destroyContainer, true),
    route('POST', `${L}/{vmid}/clone`, clonePermission, cloneContainer, true),
    route('POST', `${L}/{vmid}/template`, guestModify('VM.Allocate'), templateContainer, true),
  ],
};

/**
 * The VM kind's routes (`/nodes/{node}/qemu`): the shared guest routes for the VM row of the
 * flavour table, and the handlers qemu-server has its own way.
 */
import { GUEST_FLAVOURS } from '../../guest/flavours.js';
import { sharedGuestRoutes } from '../../guest/routes.js';
import { anyone, guestAudit, guestModify, route, type RouteModule } from '../../route.js';
import { clonePermission } from '../../guest/clone.js';
import { cloneVm } from './clone.js';
import { getCloudinit, updateCloudinit } from './cloudinit.js';
import { createVm } from './create.js';
import { destroyVm } from './destroy.js';
import { moveVmDisk } from './move-disk.js';
import { rebootVm } from './reboot.js';
import { resizeVm } from './resize.js';
import { templateVm } from './template.js';
import { updateVmConfig } from './update-config.js';

const VM = GUEST_FLAVOURS.qemu;
const Q = VM.apiPath;

/** The VM kind. */
export const vmRoutes: RouteModule = {
  name: 'vm',
  routes: [
    ...sharedGuestRoutes(VM),
    route('POST', Q, anyone, createVm, true),
    route('PUT', `${Q}/{vmid}/config`, guestModify(VM.configPrivileges), updateVmConfig(false), true),
    route('POST', `${Q}/{vmid}/config`, guestModify(VM.configPrivileges), updateVmConfig(true), true),
    route('POST', `${Q}/{vmid}/status/reboot`, guestModify('VM.PowerMgmt'), rebootVm, true),
    route('PUT', `${Q}/{vmid}/resize`, guestModify('VM.Config.Disk'), resizeVm, true),
    route('POST', `${Q}/{vmid}/move_disk`, guestModify('VM.Config.Disk'), moveVmDisk, true),
    route('DELETE', `${Q}/{vmid}`, guestModify('VM.Allocate'), destroyVm, true),
    route('POST', `${Q}/{vmid}/clone`, clonePermission, cloneVm, true),
    route('POST', `${Q}/{vmid}/template`, guestModify('VM.Allocate'), templateVm, true),
    route('GET', `${Q}/{vmid}/cloudinit`, guestAudit, getCloudinit),
    route('PUT', `${Q}/{vmid}/cloudinit`, guestModify('VM.Config.Cloudinit'), updateCloudinit, true),
  ],
};

/**
 * The routes both guest flavours serve with the same handler, made for one row of the flavour
 * table: listing, indexes, config and pending reads, status, start/stop/shutdown. What a flavour
 * does its own way (create, config writes, reboot, resize, disk moves, destroy) its kind module
 * adds beside these.
 */
import { anyone, guestAudit, guestModify, route, type Route } from '../route.js';
import type { GuestFlavour } from './flavours.js';
import { power } from './power.js';
import { getConfig, getPending, getStatusCurrent, guestIndex, listGuests, statusIndex } from './reads.js';

/** The shared routes of one flavour, under its `apiPath`. */
export function sharedGuestRoutes(flavour: GuestFlavour): Route[] {
  const base = flavour.apiPath;
  return [
    route('GET', base, anyone, listGuests(flavour)),
    route('GET', `${base}/{vmid}`, anyone, guestIndex(flavour)),
    route('GET', `${base}/{vmid}/status`, anyone, statusIndex(flavour)),
    route('GET', `${base}/{vmid}/config`, guestAudit, getConfig(flavour)),
    route('GET', `${base}/{vmid}/pending`, guestAudit, getPending(flavour)),
    route('GET', `${base}/{vmid}/status/current`, guestAudit, getStatusCurrent(flavour)),
    route('POST', `${base}/{vmid}/status/start`, guestModify('VM.PowerMgmt'), power(flavour, 'start'), true),
    route('POST', `${base}/{vmid}/status/stop`, guestModify('VM.PowerMgmt'), power(flavour, 'stop'), true),
    route('POST', `${base}/{vmid}/status/shutdown`, guestModify('VM.PowerMgmt'), power(flavour, 'shutdown'), true),
  ];
}

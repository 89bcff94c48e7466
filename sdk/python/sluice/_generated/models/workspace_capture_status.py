from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.capture_class import CaptureClass
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.capture_class_snaps import CaptureClassSnaps
  from ..models.capture_executor_origin import CaptureExecutorOrigin
  from ..models.capture_overdue import CaptureOverdue





T = TypeVar("T", bound="WorkspaceCaptureStatus")



@_attrs_define
class WorkspaceCaptureStatus:
    """ The daemon's capture status: what is saved, what waits, what fails.

        Attributes:
            epoch (int):
            fenced (bool):
            paused (bool):
            pending (int): Captures staged on the executor and not yet registered.
            registered (int):
            staged_bytes (int):
            uploaded_bytes (int):
            uploaded_objects (int):
            worktree_id (str):
            bulk_building (bool | None | Unset):
            carried (int | None | Unset):
            changes_from (None | str | Unset): How the daemon learns of worktree changes: `kernel` (its directories
                are watched; a timed snap walks the worktree only after a change,
                or on the slow sweep) or `walk` (every timed snap walks it;
                `walkReason` says why).
            complete (bool | None | Unset): True only when the last FINAL flush quiesced every managed process,
                snapped both classes and registered everything.
            head_n (int | None | Unset): The newest capture the registrar has registered for this worktree.
            incomplete_reason (None | str | Unset):
            last_snap_error (None | str | Unset):
            last_snap_unix_ms (int | None | Unset):
            not_kept (int | None | Unset): Sockets and device nodes the last snap met: not work, so not kept
                (and no reason for a final to be incomplete), but named.
            not_kept_paths (list[str] | None | Unset):
            origin (CaptureExecutorOrigin | None | Unset):
            overdue (CaptureOverdue | None | Unset):
            pending_bulk (int | None | Unset):
            pending_bytes (int | None | Unset):
            refused (list[CaptureClass] | None | Unset): Classes the registrar refused for the session's byte quota.
            register_missing (list[str] | None | Unset):
            register_refusals (int | None | Unset):
            register_refused (None | str | Unset):
            register_refused_n (int | None | Unset):
            repairing (bool | None | Unset):
            ship_error (None | str | Unset): Why the last attempt to ship a capture failed, while shipping
                fails (`no space left in the object store`, `the object store is
                not available`, …): the daemon tries again until it ships.
            ship_failing_since_unix_ms (int | None | Unset):
            snap_failing_since_unix_ms (int | None | Unset):
            snaps (list[CaptureClassSnaps] | None | Unset):
            snaps_failed (int | None | Unset):
            unreadable (int | None | Unset):
            unreadable_paths (list[str] | None | Unset):
            walk_reason (None | str | Unset):
     """

    epoch: int
    fenced: bool
    paused: bool
    pending: int
    registered: int
    staged_bytes: int
    uploaded_bytes: int
    uploaded_objects: int
    worktree_id: str
    bulk_building: bool | None | Unset = UNSET
    carried: int | None | Unset = UNSET
    changes_from: None | str | Unset = UNSET
    complete: bool | None | Unset = UNSET
    head_n: int | None | Unset = UNSET
    incomplete_reason: None | str | Unset = UNSET
    last_snap_error: None | str | Unset = UNSET
    last_snap_unix_ms: int | None | Unset = UNSET
    not_kept: int | None | Unset = UNSET
    not_kept_paths: list[str] | None | Unset = UNSET
    origin: CaptureExecutorOrigin | None | Unset = UNSET
    overdue: CaptureOverdue | None | Unset = UNSET
    pending_bulk: int | None | Unset = UNSET
    pending_bytes: int | None | Unset = UNSET
    refused: list[CaptureClass] | None | Unset = UNSET
    register_missing: list[str] | None | Unset = UNSET
    register_refusals: int | None | Unset = UNSET
    register_refused: None | str | Unset = UNSET
    register_refused_n: int | None | Unset = UNSET
    repairing: bool | None | Unset = UNSET
    ship_error: None | str | Unset = UNSET
    ship_failing_since_unix_ms: int | None | Unset = UNSET
    snap_failing_since_unix_ms: int | None | Unset = UNSET
    snaps: list[CaptureClassSnaps] | None | Unset = UNSET
    snaps_failed: int | None | Unset = UNSET
    unreadable: int | None | Unset = UNSET
    unreadable_paths: list[str] | None | Unset = UNSET
    walk_reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_class_snaps import CaptureClassSnaps # noqa: PLC0415
        from ..models.capture_executor_origin import CaptureExecutorOrigin # noqa: PLC0415
        from ..models.capture_overdue import CaptureOverdue # noqa: PLC0415
        epoch = self.epoch

        fenced = self.fenced

        paused = self.paused

        pending = self.pending

        registered = self.registered

        staged_bytes = self.staged_bytes

        uploaded_bytes = self.uploaded_bytes

        uploaded_objects = self.uploaded_objects

        worktree_id = self.worktree_id

        bulk_building: bool | None | Unset
        if isinstance(self.bulk_building, Unset):
            bulk_building = UNSET
        else:
            bulk_building = self.bulk_building

        carried: int | None | Unset
        if isinstance(self.carried, Unset):
            carried = UNSET
        else:
            carried = self.carried

        changes_from: None | str | Unset
        if isinstance(self.changes_from, Unset):
            changes_from = UNSET
        else:
            changes_from = self.changes_from

        complete: bool | None | Unset
        if isinstance(self.complete, Unset):
            complete = UNSET
        else:
            complete = self.complete

        head_n: int | None | Unset
        if isinstance(self.head_n, Unset):
            head_n = UNSET
        else:
            head_n = self.head_n

        incomplete_reason: None | str | Unset
        if isinstance(self.incomplete_reason, Unset):
            incomplete_reason = UNSET
        else:
            incomplete_reason = self.incomplete_reason

        last_snap_error: None | str | Unset
        if isinstance(self.last_snap_error, Unset):
            last_snap_error = UNSET
        else:
            last_snap_error = self.last_snap_error

        last_snap_unix_ms: int | None | Unset
        if isinstance(self.last_snap_unix_ms, Unset):
            last_snap_unix_ms = UNSET
        else:
            last_snap_unix_ms = self.last_snap_unix_ms

        not_kept: int | None | Unset
        if isinstance(self.not_kept, Unset):
            not_kept = UNSET
        else:
            not_kept = self.not_kept

        not_kept_paths: list[str] | None | Unset
        if isinstance(self.not_kept_paths, Unset):
            not_kept_paths = UNSET
        elif isinstance(self.not_kept_paths, list):
            not_kept_paths = self.not_kept_paths


        else:
            not_kept_paths = self.not_kept_paths

        origin: dict[str, Any] | None | Unset
        if isinstance(self.origin, Unset):
            origin = UNSET
        elif isinstance(self.origin, CaptureExecutorOrigin):
            origin = self.origin.to_dict()
        else:
            origin = self.origin

        overdue: dict[str, Any] | None | Unset
        if isinstance(self.overdue, Unset):
            overdue = UNSET
        elif isinstance(self.overdue, CaptureOverdue):
            overdue = self.overdue.to_dict()
        else:
            overdue = self.overdue

        pending_bulk: int | None | Unset
        if isinstance(self.pending_bulk, Unset):
            pending_bulk = UNSET
        else:
            pending_bulk = self.pending_bulk

        pending_bytes: int | None | Unset
        if isinstance(self.pending_bytes, Unset):
            pending_bytes = UNSET
        else:
            pending_bytes = self.pending_bytes

        refused: list[str] | None | Unset
        if isinstance(self.refused, Unset):
            refused = UNSET
        elif isinstance(self.refused, list):
            refused = []
            for refused_type_0_item_data in self.refused:
                refused_type_0_item = refused_type_0_item_data.value
                refused.append(refused_type_0_item)


        else:
            refused = self.refused

        register_missing: list[str] | None | Unset
        if isinstance(self.register_missing, Unset):
            register_missing = UNSET
        elif isinstance(self.register_missing, list):
            register_missing = self.register_missing


        else:
            register_missing = self.register_missing

        register_refusals: int | None | Unset
        if isinstance(self.register_refusals, Unset):
            register_refusals = UNSET
        else:
            register_refusals = self.register_refusals

        register_refused: None | str | Unset
        if isinstance(self.register_refused, Unset):
            register_refused = UNSET
        else:
            register_refused = self.register_refused

        register_refused_n: int | None | Unset
        if isinstance(self.register_refused_n, Unset):
            register_refused_n = UNSET
        else:
            register_refused_n = self.register_refused_n

        repairing: bool | None | Unset
        if isinstance(self.repairing, Unset):
            repairing = UNSET
        else:
            repairing = self.repairing

        ship_error: None | str | Unset
        if isinstance(self.ship_error, Unset):
            ship_error = UNSET
        else:
            ship_error = self.ship_error

        ship_failing_since_unix_ms: int | None | Unset
        if isinstance(self.ship_failing_since_unix_ms, Unset):
            ship_failing_since_unix_ms = UNSET
        else:
            ship_failing_since_unix_ms = self.ship_failing_since_unix_ms

        snap_failing_since_unix_ms: int | None | Unset
        if isinstance(self.snap_failing_since_unix_ms, Unset):
            snap_failing_since_unix_ms = UNSET
        else:
            snap_failing_since_unix_ms = self.snap_failing_since_unix_ms

        snaps: list[dict[str, Any]] | None | Unset
        if isinstance(self.snaps, Unset):
            snaps = UNSET
        elif isinstance(self.snaps, list):
            snaps = []
            for snaps_type_0_item_data in self.snaps:
                snaps_type_0_item = snaps_type_0_item_data.to_dict()
                snaps.append(snaps_type_0_item)


        else:
            snaps = self.snaps

        snaps_failed: int | None | Unset
        if isinstance(self.snaps_failed, Unset):
            snaps_failed = UNSET
        else:
            snaps_failed = self.snaps_failed

        unreadable: int | None | Unset
        if isinstance(self.unreadable, Unset):
            unreadable = UNSET
        else:
            unreadable = self.unreadable

        unreadable_paths: list[str] | None | Unset
        if isinstance(self.unreadable_paths, Unset):
            unreadable_paths = UNSET
        elif isinstance(self.unreadable_paths, list):
            unreadable_paths = self.unreadable_paths


        else:
            unreadable_paths = self.unreadable_paths

        walk_reason: None | str | Unset
        if isinstance(self.walk_reason, Unset):
            walk_reason = UNSET
        else:
            walk_reason = self.walk_reason


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "epoch": epoch,
            "fenced": fenced,
            "paused": paused,
            "pending": pending,
            "registered": registered,
            "stagedBytes": staged_bytes,
            "uploadedBytes": uploaded_bytes,
            "uploadedObjects": uploaded_objects,
            "worktreeId": worktree_id,
        })
        if bulk_building is not UNSET:
            field_dict["bulkBuilding"] = bulk_building
        if carried is not UNSET:
            field_dict["carried"] = carried
        if changes_from is not UNSET:
            field_dict["changesFrom"] = changes_from
        if complete is not UNSET:
            field_dict["complete"] = complete
        if head_n is not UNSET:
            field_dict["headN"] = head_n
        if incomplete_reason is not UNSET:
            field_dict["incompleteReason"] = incomplete_reason
        if last_snap_error is not UNSET:
            field_dict["lastSnapError"] = last_snap_error
        if last_snap_unix_ms is not UNSET:
            field_dict["lastSnapUnixMs"] = last_snap_unix_ms
        if not_kept is not UNSET:
            field_dict["notKept"] = not_kept
        if not_kept_paths is not UNSET:
            field_dict["notKeptPaths"] = not_kept_paths
        if origin is not UNSET:
            field_dict["origin"] = origin
        if overdue is not UNSET:
            field_dict["overdue"] = overdue
        if pending_bulk is not UNSET:
            field_dict["pendingBulk"] = pending_bulk
        if pending_bytes is not UNSET:
            field_dict["pendingBytes"] = pending_bytes
        if refused is not UNSET:
            field_dict["refused"] = refused
        if register_missing is not UNSET:
            field_dict["registerMissing"] = register_missing
        if register_refusals is not UNSET:
            field_dict["registerRefusals"] = register_refusals
        if register_refused is not UNSET:
            field_dict["registerRefused"] = register_refused
        if register_refused_n is not UNSET:
            field_dict["registerRefusedN"] = register_refused_n
        if repairing is not UNSET:
            field_dict["repairing"] = repairing
        if ship_error is not UNSET:
            field_dict["shipError"] = ship_error
        if ship_failing_since_unix_ms is not UNSET:
            field_dict["shipFailingSinceUnixMs"] = ship_failing_since_unix_ms
        if snap_failing_since_unix_ms is not UNSET:
            field_dict["snapFailingSinceUnixMs"] = snap_failing_since_unix_ms
        if snaps is not UNSET:
            field_dict["snaps"] = snaps
        if snaps_failed is not UNSET:
            field_dict["snapsFailed"] = snaps_failed
        if unreadable is not UNSET:
            field_dict["unreadable"] = unreadable
        if unreadable_paths is not UNSET:
            field_dict["unreadablePaths"] = unreadable_paths
        if walk_reason is not UNSET:
            field_dict["walkReason"] = walk_reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_class_snaps import CaptureClassSnaps # noqa: PLC0415
        from ..models.capture_executor_origin import CaptureExecutorOrigin # noqa: PLC0415
        from ..models.capture_overdue import CaptureOverdue # noqa: PLC0415
        d = dict(src_dict)
        epoch = d.pop("epoch")

        fenced = d.pop("fenced")

        paused = d.pop("paused")

        pending = d.pop("pending")

        registered = d.pop("registered")

        staged_bytes = d.pop("stagedBytes")

        uploaded_bytes = d.pop("uploadedBytes")

        uploaded_objects = d.pop("uploadedObjects")

        worktree_id = d.pop("worktreeId")

        def _parse_bulk_building(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        bulk_building = _parse_bulk_building(d.pop("bulkBuilding", UNSET))


        def _parse_carried(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        carried = _parse_carried(d.pop("carried", UNSET))


        def _parse_changes_from(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        changes_from = _parse_changes_from(d.pop("changesFrom", UNSET))


        def _parse_complete(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        complete = _parse_complete(d.pop("complete", UNSET))


        def _parse_head_n(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_n = _parse_head_n(d.pop("headN", UNSET))


        def _parse_incomplete_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        incomplete_reason = _parse_incomplete_reason(d.pop("incompleteReason", UNSET))


        def _parse_last_snap_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_snap_error = _parse_last_snap_error(d.pop("lastSnapError", UNSET))


        def _parse_last_snap_unix_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_snap_unix_ms = _parse_last_snap_unix_ms(d.pop("lastSnapUnixMs", UNSET))


        def _parse_not_kept(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        not_kept = _parse_not_kept(d.pop("notKept", UNSET))


        def _parse_not_kept_paths(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                not_kept_paths_type_0 = cast(list[str], data)

                return not_kept_paths_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        not_kept_paths = _parse_not_kept_paths(d.pop("notKeptPaths", UNSET))


        def _parse_origin(data: object) -> CaptureExecutorOrigin | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                origin_type_1 = CaptureExecutorOrigin.from_dict(data)



                return origin_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureExecutorOrigin | None | Unset, data)

        origin = _parse_origin(d.pop("origin", UNSET))


        def _parse_overdue(data: object) -> CaptureOverdue | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                overdue_type_1 = CaptureOverdue.from_dict(data)



                return overdue_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureOverdue | None | Unset, data)

        overdue = _parse_overdue(d.pop("overdue", UNSET))


        def _parse_pending_bulk(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pending_bulk = _parse_pending_bulk(d.pop("pendingBulk", UNSET))


        def _parse_pending_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pending_bytes = _parse_pending_bytes(d.pop("pendingBytes", UNSET))


        def _parse_refused(data: object) -> list[CaptureClass] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                refused_type_0 = []
                _refused_type_0 = data
                for refused_type_0_item_data in (_refused_type_0):
                    refused_type_0_item = CaptureClass(refused_type_0_item_data)



                    refused_type_0.append(refused_type_0_item)

                return refused_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[CaptureClass] | None | Unset, data)

        refused = _parse_refused(d.pop("refused", UNSET))


        def _parse_register_missing(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                register_missing_type_0 = cast(list[str], data)

                return register_missing_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        register_missing = _parse_register_missing(d.pop("registerMissing", UNSET))


        def _parse_register_refusals(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        register_refusals = _parse_register_refusals(d.pop("registerRefusals", UNSET))


        def _parse_register_refused(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        register_refused = _parse_register_refused(d.pop("registerRefused", UNSET))


        def _parse_register_refused_n(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        register_refused_n = _parse_register_refused_n(d.pop("registerRefusedN", UNSET))


        def _parse_repairing(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        repairing = _parse_repairing(d.pop("repairing", UNSET))


        def _parse_ship_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ship_error = _parse_ship_error(d.pop("shipError", UNSET))


        def _parse_ship_failing_since_unix_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ship_failing_since_unix_ms = _parse_ship_failing_since_unix_ms(d.pop("shipFailingSinceUnixMs", UNSET))


        def _parse_snap_failing_since_unix_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        snap_failing_since_unix_ms = _parse_snap_failing_since_unix_ms(d.pop("snapFailingSinceUnixMs", UNSET))


        def _parse_snaps(data: object) -> list[CaptureClassSnaps] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                snaps_type_0 = []
                _snaps_type_0 = data
                for snaps_type_0_item_data in (_snaps_type_0):
                    snaps_type_0_item = CaptureClassSnaps.from_dict(snaps_type_0_item_data)



                    snaps_type_0.append(snaps_type_0_item)

                return snaps_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[CaptureClassSnaps] | None | Unset, data)

        snaps = _parse_snaps(d.pop("snaps", UNSET))


        def _parse_snaps_failed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        snaps_failed = _parse_snaps_failed(d.pop("snapsFailed", UNSET))


        def _parse_unreadable(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        unreadable = _parse_unreadable(d.pop("unreadable", UNSET))


        def _parse_unreadable_paths(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                unreadable_paths_type_0 = cast(list[str], data)

                return unreadable_paths_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        unreadable_paths = _parse_unreadable_paths(d.pop("unreadablePaths", UNSET))


        def _parse_walk_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        walk_reason = _parse_walk_reason(d.pop("walkReason", UNSET))


        workspace_capture_status = cls(
            epoch=epoch,
            fenced=fenced,
            paused=paused,
            pending=pending,
            registered=registered,
            staged_bytes=staged_bytes,
            uploaded_bytes=uploaded_bytes,
            uploaded_objects=uploaded_objects,
            worktree_id=worktree_id,
            bulk_building=bulk_building,
            carried=carried,
            changes_from=changes_from,
            complete=complete,
            head_n=head_n,
            incomplete_reason=incomplete_reason,
            last_snap_error=last_snap_error,
            last_snap_unix_ms=last_snap_unix_ms,
            not_kept=not_kept,
            not_kept_paths=not_kept_paths,
            origin=origin,
            overdue=overdue,
            pending_bulk=pending_bulk,
            pending_bytes=pending_bytes,
            refused=refused,
            register_missing=register_missing,
            register_refusals=register_refusals,
            register_refused=register_refused,
            register_refused_n=register_refused_n,
            repairing=repairing,
            ship_error=ship_error,
            ship_failing_since_unix_ms=ship_failing_since_unix_ms,
            snap_failing_since_unix_ms=snap_failing_since_unix_ms,
            snaps=snaps,
            snaps_failed=snaps_failed,
            unreadable=unreadable,
            unreadable_paths=unreadable_paths,
            walk_reason=walk_reason,
        )


        workspace_capture_status.additional_properties = d
        return workspace_capture_status

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties

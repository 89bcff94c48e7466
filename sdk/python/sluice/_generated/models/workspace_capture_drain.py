from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.capture_drain_state import CaptureDrainState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.capture_drain_completion import CaptureDrainCompletion
  from ..models.capture_drain_discard import CaptureDrainDiscard
  from ..models.capture_drain_executor import CaptureDrainExecutor
  from ..models.capture_drain_retained import CaptureDrainRetained
  from ..models.capture_drain_revoked import CaptureDrainRevoked





T = TypeVar("T", bound="WorkspaceCaptureDrain")



@_attrs_define
class WorkspaceCaptureDrain:
    """ What the control plane last observed of a capture-sourced workspace's
    drain: until the runtime is gone, this is what is happening.

        Attributes:
            state (CaptureDrainState): `draining`, `kept`, `saved`, `gone`, `stop-failed`, `stopped` or `discarded`.
            completion (CaptureDrainCompletion | None | Unset):
            completion_revoked (CaptureDrainRevoked | None | Unset):
            detail (None | str | Unset):
            discard (CaptureDrainDiscard | None | Unset):
            executor (CaptureDrainExecutor | None | Unset):
            observed_at (None | str | Unset):
            pending (int | None | Unset): Captures the daemon had not registered yet, when last read (sluice).
            pending_bytes (int | None | Unset): Their bytes, when last read (sluice).
            preservation_starts_at (None | str | Unset):
            retained (CaptureDrainRetained | None | Unset):
     """

    state: CaptureDrainState
    completion: CaptureDrainCompletion | None | Unset = UNSET
    completion_revoked: CaptureDrainRevoked | None | Unset = UNSET
    detail: None | str | Unset = UNSET
    discard: CaptureDrainDiscard | None | Unset = UNSET
    executor: CaptureDrainExecutor | None | Unset = UNSET
    observed_at: None | str | Unset = UNSET
    pending: int | None | Unset = UNSET
    pending_bytes: int | None | Unset = UNSET
    preservation_starts_at: None | str | Unset = UNSET
    retained: CaptureDrainRetained | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_drain_completion import CaptureDrainCompletion # noqa: PLC0415
        from ..models.capture_drain_discard import CaptureDrainDiscard # noqa: PLC0415
        from ..models.capture_drain_executor import CaptureDrainExecutor # noqa: PLC0415
        from ..models.capture_drain_retained import CaptureDrainRetained # noqa: PLC0415
        from ..models.capture_drain_revoked import CaptureDrainRevoked # noqa: PLC0415
        state = self.state.value

        completion: dict[str, Any] | None | Unset
        if isinstance(self.completion, Unset):
            completion = UNSET
        elif isinstance(self.completion, CaptureDrainCompletion):
            completion = self.completion.to_dict()
        else:
            completion = self.completion

        completion_revoked: dict[str, Any] | None | Unset
        if isinstance(self.completion_revoked, Unset):
            completion_revoked = UNSET
        elif isinstance(self.completion_revoked, CaptureDrainRevoked):
            completion_revoked = self.completion_revoked.to_dict()
        else:
            completion_revoked = self.completion_revoked

        detail: None | str | Unset
        if isinstance(self.detail, Unset):
            detail = UNSET
        else:
            detail = self.detail

        discard: dict[str, Any] | None | Unset
        if isinstance(self.discard, Unset):
            discard = UNSET
        elif isinstance(self.discard, CaptureDrainDiscard):
            discard = self.discard.to_dict()
        else:
            discard = self.discard

        executor: dict[str, Any] | None | Unset
        if isinstance(self.executor, Unset):
            executor = UNSET
        elif isinstance(self.executor, CaptureDrainExecutor):
            executor = self.executor.to_dict()
        else:
            executor = self.executor

        observed_at: None | str | Unset
        if isinstance(self.observed_at, Unset):
            observed_at = UNSET
        else:
            observed_at = self.observed_at

        pending: int | None | Unset
        if isinstance(self.pending, Unset):
            pending = UNSET
        else:
            pending = self.pending

        pending_bytes: int | None | Unset
        if isinstance(self.pending_bytes, Unset):
            pending_bytes = UNSET
        else:
            pending_bytes = self.pending_bytes

        preservation_starts_at: None | str | Unset
        if isinstance(self.preservation_starts_at, Unset):
            preservation_starts_at = UNSET
        else:
            preservation_starts_at = self.preservation_starts_at

        retained: dict[str, Any] | None | Unset
        if isinstance(self.retained, Unset):
            retained = UNSET
        elif isinstance(self.retained, CaptureDrainRetained):
            retained = self.retained.to_dict()
        else:
            retained = self.retained


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "state": state,
        })
        if completion is not UNSET:
            field_dict["completion"] = completion
        if completion_revoked is not UNSET:
            field_dict["completionRevoked"] = completion_revoked
        if detail is not UNSET:
            field_dict["detail"] = detail
        if discard is not UNSET:
            field_dict["discard"] = discard
        if executor is not UNSET:
            field_dict["executor"] = executor
        if observed_at is not UNSET:
            field_dict["observedAt"] = observed_at
        if pending is not UNSET:
            field_dict["pending"] = pending
        if pending_bytes is not UNSET:
            field_dict["pendingBytes"] = pending_bytes
        if preservation_starts_at is not UNSET:
            field_dict["preservationStartsAt"] = preservation_starts_at
        if retained is not UNSET:
            field_dict["retained"] = retained

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_drain_completion import CaptureDrainCompletion # noqa: PLC0415
        from ..models.capture_drain_discard import CaptureDrainDiscard # noqa: PLC0415
        from ..models.capture_drain_executor import CaptureDrainExecutor # noqa: PLC0415
        from ..models.capture_drain_retained import CaptureDrainRetained # noqa: PLC0415
        from ..models.capture_drain_revoked import CaptureDrainRevoked # noqa: PLC0415
        d = dict(src_dict)
        state = CaptureDrainState(d.pop("state"))




        def _parse_completion(data: object) -> CaptureDrainCompletion | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                completion_type_1 = CaptureDrainCompletion.from_dict(data)



                return completion_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureDrainCompletion | None | Unset, data)

        completion = _parse_completion(d.pop("completion", UNSET))


        def _parse_completion_revoked(data: object) -> CaptureDrainRevoked | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                completion_revoked_type_1 = CaptureDrainRevoked.from_dict(data)



                return completion_revoked_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureDrainRevoked | None | Unset, data)

        completion_revoked = _parse_completion_revoked(d.pop("completionRevoked", UNSET))


        def _parse_detail(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        detail = _parse_detail(d.pop("detail", UNSET))


        def _parse_discard(data: object) -> CaptureDrainDiscard | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                discard_type_1 = CaptureDrainDiscard.from_dict(data)



                return discard_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureDrainDiscard | None | Unset, data)

        discard = _parse_discard(d.pop("discard", UNSET))


        def _parse_executor(data: object) -> CaptureDrainExecutor | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                executor_type_1 = CaptureDrainExecutor.from_dict(data)



                return executor_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureDrainExecutor | None | Unset, data)

        executor = _parse_executor(d.pop("executor", UNSET))


        def _parse_observed_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        observed_at = _parse_observed_at(d.pop("observedAt", UNSET))


        def _parse_pending(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pending = _parse_pending(d.pop("pending", UNSET))


        def _parse_pending_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pending_bytes = _parse_pending_bytes(d.pop("pendingBytes", UNSET))


        def _parse_preservation_starts_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        preservation_starts_at = _parse_preservation_starts_at(d.pop("preservationStartsAt", UNSET))


        def _parse_retained(data: object) -> CaptureDrainRetained | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                retained_type_1 = CaptureDrainRetained.from_dict(data)



                return retained_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureDrainRetained | None | Unset, data)

        retained = _parse_retained(d.pop("retained", UNSET))


        workspace_capture_drain = cls(
            state=state,
            completion=completion,
            completion_revoked=completion_revoked,
            detail=detail,
            discard=discard,
            executor=executor,
            observed_at=observed_at,
            pending=pending,
            pending_bytes=pending_bytes,
            preservation_starts_at=preservation_starts_at,
            retained=retained,
        )


        workspace_capture_drain.additional_properties = d
        return workspace_capture_drain

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

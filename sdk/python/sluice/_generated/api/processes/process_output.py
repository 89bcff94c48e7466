from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.process_output_event import ProcessOutputEvent
from ...models.wait_for import WaitFor
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    process_id: str,
    *,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id



    

    params: dict[str, Any] = {}

    json_wait_for: str | Unset = UNSET
    if not isinstance(wait_for, Unset):
        json_wait_for = wait_for.value

    params["waitFor"] = json_wait_for

    params["timeoutMs"] = timeout_ms

    params["ownerUserId"] = owner_user_id

    params["follow"] = follow


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/{workspace_id}/processes/{process_id}/output".format(workspace_id=quote(str(workspace_id), safe=""),process_id=quote(str(process_id), safe=""),),
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ProcessOutputEvent | None:
    if response.status_code == 200:
        response_200 = ProcessOutputEvent.from_dict(response.text)



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ProcessOutputEvent]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | ProcessOutputEvent]:
    """ A process's output, from a position, as it comes (Server-Sent Events).

     The process's kept output after `Last-Event-ID` (a position; from what is kept when absent) as
    Server-Sent Events: `event: stdout` or `stderr` with `data: {"text"}` and `id:` the position after
    it; `event: cut` (`data: {"from", "to"}`) when output before what is kept was asked for (the newest
    4 MiB is kept); with `follow=true` then each new chunk as it comes; `event: ended` (`data:` the
    process) once it has ended, and the stream closes. Without `follow` the stream closes once what is
    kept was sent.

    Args:
        workspace_id (str):
        process_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ProcessOutputEvent]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
process_id=process_id,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
follow=follow,
last_event_id=last_event_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> ErrorBody | ProcessOutputEvent | None:
    """ A process's output, from a position, as it comes (Server-Sent Events).

     The process's kept output after `Last-Event-ID` (a position; from what is kept when absent) as
    Server-Sent Events: `event: stdout` or `stderr` with `data: {"text"}` and `id:` the position after
    it; `event: cut` (`data: {"from", "to"}`) when output before what is kept was asked for (the newest
    4 MiB is kept); with `follow=true` then each new chunk as it comes; `event: ended` (`data:` the
    process) once it has ended, and the stream closes. Without `follow` the stream closes once what is
    kept was sent.

    Args:
        workspace_id (str):
        process_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ProcessOutputEvent
     """


    return sync_detailed(
        workspace_id=workspace_id,
process_id=process_id,
client=client,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
follow=follow,
last_event_id=last_event_id,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> Response[ErrorBody | ProcessOutputEvent]:
    """ A process's output, from a position, as it comes (Server-Sent Events).

     The process's kept output after `Last-Event-ID` (a position; from what is kept when absent) as
    Server-Sent Events: `event: stdout` or `stderr` with `data: {"text"}` and `id:` the position after
    it; `event: cut` (`data: {"from", "to"}`) when output before what is kept was asked for (the newest
    4 MiB is kept); with `follow=true` then each new chunk as it comes; `event: ended` (`data:` the
    process) once it has ended, and the stream closes. Without `follow` the stream closes once what is
    kept was sent.

    Args:
        workspace_id (str):
        process_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ProcessOutputEvent]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
process_id=process_id,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
follow=follow,
last_event_id=last_event_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    follow: str | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,

) -> ErrorBody | ProcessOutputEvent | None:
    """ A process's output, from a position, as it comes (Server-Sent Events).

     The process's kept output after `Last-Event-ID` (a position; from what is kept when absent) as
    Server-Sent Events: `event: stdout` or `stderr` with `data: {"text"}` and `id:` the position after
    it; `event: cut` (`data: {"from", "to"}`) when output before what is kept was asked for (the newest
    4 MiB is kept); with `follow=true` then each new chunk as it comes; `event: ended` (`data:` the
    process) once it has ended, and the stream closes. Without `follow` the stream closes once what is
    kept was sent.

    Args:
        workspace_id (str):
        process_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        follow (str | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ProcessOutputEvent
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
process_id=process_id,
client=client,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
follow=follow,
last_event_id=last_event_id,

    )).parsed

from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.list_processes_response import ListProcessesResponse
from ...models.wait_for import WaitFor
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_wait_for: str | Unset = UNSET
    if not isinstance(wait_for, Unset):
        json_wait_for = wait_for.value

    params["waitFor"] = json_wait_for

    params["timeoutMs"] = timeout_ms

    params["ownerUserId"] = owner_user_id


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/{workspace_id}/processes".format(workspace_id=quote(str(workspace_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ListProcessesResponse | None:
    if response.status_code == 200:
        response_200 = ListProcessesResponse.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ListProcessesResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,

) -> Response[ErrorBody | ListProcessesResponse]:
    """ The workspace's processes, oldest first.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ListProcessesResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,

) -> ErrorBody | ListProcessesResponse | None:
    """ The workspace's processes, oldest first.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ListProcessesResponse
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,

) -> Response[ErrorBody | ListProcessesResponse]:
    """ The workspace's processes, oldest first.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ListProcessesResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,

) -> ErrorBody | ListProcessesResponse | None:
    """ The workspace's processes, oldest first.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ListProcessesResponse
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,

    )).parsed

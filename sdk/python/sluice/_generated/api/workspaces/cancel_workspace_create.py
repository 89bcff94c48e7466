from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.owner_request import OwnerRequest
from ...models.workspace_create_state import WorkspaceCreateState
from typing import cast



def _get_kwargs(
    idempotency_key: str,
    *,
    body: OwnerRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/workspaces/idempotency-keys/{idempotency_key}/cancel".format(idempotency_key=quote(str(idempotency_key), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorkspaceCreateState | None:
    if response.status_code == 200:
        response_200 = WorkspaceCreateState.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorkspaceCreateState]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> Response[ErrorBody | WorkspaceCreateState]:
    """ Cancel the create with this key, so it never commits (`found` if it already did).

    Args:
        idempotency_key (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceCreateState]
     """


    kwargs = _get_kwargs(
        idempotency_key=idempotency_key,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> ErrorBody | WorkspaceCreateState | None:
    """ Cancel the create with this key, so it never commits (`found` if it already did).

    Args:
        idempotency_key (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceCreateState
     """


    return sync_detailed(
        idempotency_key=idempotency_key,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> Response[ErrorBody | WorkspaceCreateState]:
    """ Cancel the create with this key, so it never commits (`found` if it already did).

    Args:
        idempotency_key (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceCreateState]
     """


    kwargs = _get_kwargs(
        idempotency_key=idempotency_key,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    body: OwnerRequest,

) -> ErrorBody | WorkspaceCreateState | None:
    """ Cancel the create with this key, so it never commits (`found` if it already did).

    Args:
        idempotency_key (str):
        body (OwnerRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceCreateState
     """


    return (await asyncio_detailed(
        idempotency_key=idempotency_key,
client=client,
body=body,

    )).parsed

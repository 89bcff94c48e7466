from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.register_ssh_key_request import RegisterSshKeyRequest
from ...models.ssh_key_record import SshKeyRecord
from typing import cast



def _get_kwargs(
    *,
    body: RegisterSshKeyRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/ssh-keys",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | SshKeyRecord | None:
    if response.status_code == 200:
        response_200 = SshKeyRecord.from_dict(response.json())



        return response_200

    if response.status_code == 201:
        response_201 = SshKeyRecord.from_dict(response.json())



        return response_201

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | SshKeyRecord]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: RegisterSshKeyRequest,

) -> Response[ErrorBody | SshKeyRecord]:
    """ Registers a public key for a principal. The key's SHA256 fingerprint is
    its id; a key belongs to one principal. Registering it again for the
    same principal answers the existing record.

    Args:
        body (RegisterSshKeyRequest): A user's SSH public key to register for a principal.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | SshKeyRecord]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: RegisterSshKeyRequest,

) -> ErrorBody | SshKeyRecord | None:
    """ Registers a public key for a principal. The key's SHA256 fingerprint is
    its id; a key belongs to one principal. Registering it again for the
    same principal answers the existing record.

    Args:
        body (RegisterSshKeyRequest): A user's SSH public key to register for a principal.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | SshKeyRecord
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: RegisterSshKeyRequest,

) -> Response[ErrorBody | SshKeyRecord]:
    """ Registers a public key for a principal. The key's SHA256 fingerprint is
    its id; a key belongs to one principal. Registering it again for the
    same principal answers the existing record.

    Args:
        body (RegisterSshKeyRequest): A user's SSH public key to register for a principal.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | SshKeyRecord]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: RegisterSshKeyRequest,

) -> ErrorBody | SshKeyRecord | None:
    """ Registers a public key for a principal. The key's SHA256 fingerprint is
    its id; a key belongs to one principal. Registering it again for the
    same principal answers the existing record.

    Args:
        body (RegisterSshKeyRequest): A user's SSH public key to register for a principal.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | SshKeyRecord
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
